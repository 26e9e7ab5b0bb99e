// End-to-end tests of what PyTorch's snapshots carry since 2026, in Debian's headless
// Chromium, on the fixtures written as PyTorch writes each field
// (tests/python/make_format_fixtures.py; the generator's numbers in
// tests/expectations/format.json): a snapshot with pinned host memory shows both devices, the
// host named "host (pinned)" with its own overview; an FX-augmented snapshot groups its
// compiled allocations under the original model code in the table, as `memsight table` does;
// an allocation's annotations, tensor and forward code show in the table's detail and the
// pinned details.
//
// Run with `./x test` (which builds dist/ first) or `node --test tests/e2e/format_fields.test.mjs`.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

import { metrics, openFiles, ROOT, sharedBrowser, waitSettled } from './helpers.mjs';

const FIXTURES = path.join(ROOT, 'tests/fixtures');
const expected = JSON.parse(fs.readFileSync(path.join(ROOT, 'tests/expectations/format.json'), 'utf8'));
const WAIT = 60_000;
const shared = sharedBrowser();

describe('the 2026 fields', () => {
  it('a snapshot with pinned host memory shows the accelerator first and the host as its own device', async () => {
    const { page, errors } = await shared.open();
    try {
      await openFiles(page, path.join(FIXTURES, 'pinned_host.pickle'));
      assert.equal(await waitSettled(page), 'ready');
      const options = await page.$$eval('#device-picker option', (os) => os.map((o) => [o.value, o.textContent.trim()]));
      assert.deepEqual(options.map(([, name]) => name), ['cuda:0', 'host (pinned)']);
      assert.equal(await page.$eval('#device-picker', (s) => s.value), '0', 'the accelerator first');
      const [hostValue] = options[1];
      await page.selectOption('#device-picker', hostValue);
      const host = expected['pinned_host.pickle'].host;
      await page.waitForFunction((peak) => document.querySelector('[data-metric="peak-allocated-bytes"]')?.dataset.value === String(peak), host.peak_allocated_bytes, { timeout: WAIT });
      const m = await metrics(page);
      assert.equal(m['peak-allocated-bytes'], BigInt(host.peak_allocated_bytes));
      assert.equal(m['trace-entries'], BigInt(host.trace_entries));
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });

  it('an FX-augmented snapshot groups its compiled allocations under the original model code', async () => {
    const { page, errors } = await shared.open({ viewport: { width: 1500, height: 1000 } });
    try {
      await openFiles(page, path.join(FIXTURES, 'fx_augmented.pickle'));
      assert.equal(await waitSettled(page), 'ready');
      await page.waitForSelector('#allocations-table[data-ready="true"]', { timeout: WAIT });
      const answers = () => page.$eval('#allocations-table', (e) => Number(e.dataset.answers));
      const after = async (act) => {
        const before = await answers();
        await act();
        await page.waitForFunction((b) => Number(document.querySelector('#allocations-table').dataset.answers) > b, before, { timeout: WAIT });
      };
      await after(() => page.click('#table-scope-all'));
      await after(() => page.selectOption('#table-group-by', 'callsite'));
      const groups = await page.$$eval('#allocations-table .tr.group[data-depth="0"]', (rows) => rows.map((g) => [g.querySelector('.group-name').title, Number(g.dataset.count), Number(g.dataset.requestedBytes)]));
      const byCallSite = Object.entries(expected['fx_augmented.pickle'].callsites).map(([site, [count, bytes]]) => [site, count, bytes]);
      assert.deepEqual(
        groups.sort((a, b) => a[0].localeCompare(b[0])),
        byCallSite.sort((a, b) => a[0].localeCompare(b[0])),
        'each compiled allocation counted under the model line its node came from',
      );
      assert.ok(groups.every(([site]) => !site.includes('fx_generated')), 'no generated file is a call site');
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });

  /** Opens `name` with the table listing every allocation; resolves once it answered. */
  async function openAll(page, name) {
    await openFiles(page, path.join(FIXTURES, name));
    assert.equal(await waitSettled(page), 'ready');
    await page.waitForSelector('#allocations-table[data-ready="true"]', { timeout: WAIT });
    const before = await page.$eval('#allocations-table', (e) => Number(e.dataset.answers));
    await page.click('#table-scope-all');
    await page.waitForFunction((b) => Number(document.querySelector('#allocations-table').dataset.answers) > b, before, { timeout: WAIT });
  }

  /** Selects the table's row of the allocation at `address`; resolves once its detail is this row's. */
  async function selectRow(page, address) {
    const row = `#allocations-table .tr.row[data-address="${address}"]`;
    const element = await page.$eval(row, (r) => r.dataset.element);
    await page.click(row);
    await page.waitForSelector(`#table-detail[data-stack-for="${element}"]`, { timeout: WAIT });
  }

  it('an allocation\'s annotations show in the table\'s detail and pinned on the timeline', async () => {
    const { page, errors } = await shared.open({ viewport: { width: 1500, height: 1000 } });
    try {
      await openAll(page, 'annotate.pickle');
      for (const allocation of expected['annotate.pickle'].allocations) {
        await selectRow(page, allocation.address);
        const listed = await page.$$eval('#table-detail-annotations li', (items) => items.map((li) => [Number(li.dataset.event), li.querySelector('code').textContent, li.textContent]));
        assert.deepEqual(listed.map(([event, text]) => [event, text]), allocation.annotations.map(([row, text]) => [row, text]), `allocation at row ${allocation.alloc_row}`);
        allocation.annotations.forEach(([, , , site], k) => assert.ok(listed[k][2].includes(site), `the site ${site}`));
      }
      // Pinned on the timeline, the same annotations.
      const first = expected['annotate.pickle'].allocations[0];
      await selectRow(page, first.address);
      await page.click('#table-show-on-timeline');
      await page.waitForSelector('#pinned', { timeout: WAIT });
      const pinned = await page.$$eval('#pinned-annotations li', (items) => items.map((li) => li.querySelector('code').textContent));
      assert.deepEqual(pinned, first.annotations.map(([, text]) => text));
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });

  it('an allocation\'s tensor and a backward allocation\'s forward code show in its details', async () => {
    const { page, errors } = await shared.open({ viewport: { width: 1500, height: 1000 } });
    try {
      await openAll(page, 'source_and_shapes.pickle');
      const rows = await page.$$eval('#allocations-table .tr.row', (rs) => rs.map((r) => r.dataset.address));
      const shapes = expected['source_and_shapes.pickle'];
      let shown = 0;
      for (const address of rows) {
        await selectRow(page, address);
        const tensor = await page.$eval('#table-detail', (d) => d.querySelector('#table-detail-tensor')?.textContent ?? null);
        const before = shapes.shapes_before?.[address];
        if (before) {
          assert.equal(tensor, `${before[1]} ${before[0]}`, `the block alive before the trace at ${address}`);
        }
        if (tensor) shown += 1;
      }
      assert.ok(shown >= Object.keys(shapes.shapes).length, `tensors shown: ${shown}`);
      await page.context().close();

      const second = await shared.open({ viewport: { width: 1500, height: 1000 } });
      const p2 = second.page;
      await openAll(p2, 'forward_frames.pickle');
      const forwardRows = expected['forward_frames.pickle'].forward_rows;
      const addresses = await p2.$$eval('#allocations-table .tr.row', (rs) => rs.map((r) => r.dataset.address));
      let backward = 0;
      for (const address of addresses) {
        await selectRow(p2, address);
        const forward = await p2.$eval('#table-detail', (d) => d.querySelector('#table-detail-forward')?.textContent ?? null);
        if (forward === null) continue;
        backward += 1;
        assert.ok(Object.values(forwardRows).some((frames) => frames[0] === forward), `${forward} is a forward stack's top`);
        const frames = await p2.$$eval('#table-forward-stack li.frame .frame-file', (fs) => fs.map((f) => f.textContent));
        assert.ok(frames.length > 0, 'the forward stack is listed');
      }
      assert.ok(backward > 0, 'a backward allocation shows its forward code');
      assert.deepEqual([...errors, ...second.errors], []);
      await second.context.close();
    } finally {
      await page.context().close().catch(() => {});
    }
  });

  it('an NPU snapshot\'s downloads are named by its kind of device', async () => {
    const { page, errors } = await shared.open({ viewport: { width: 1500, height: 1000 } });
    try {
      await openFiles(page, path.join(FIXTURES, 'npu_workspace.pickle'));
      assert.equal(await waitSettled(page), 'ready');
      await page.waitForSelector('#allocations-table[data-ready="true"]', { timeout: WAIT });
      const [csv] = await Promise.all([page.waitForEvent('download'), page.click('#table-csv')]);
      assert.equal(csv.suggestedFilename(), 'npu_workspace-npu0-table.csv');
      await page.waitForSelector('#breakdown-report', { timeout: WAIT });
      const [report] = await Promise.all([page.waitForEvent('download'), page.click('#breakdown-report')]);
      assert.equal(report.suggestedFilename(), 'npu_workspace-npu0-report.md');
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });
});
