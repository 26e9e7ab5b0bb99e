// End-to-end tests of what PyTorch's snapshots carry since 2026, in Debian's headless
// Chromium, on the fixtures written as PyTorch writes each field
// (tests/python/make_format_fixtures.py; the generator's numbers in
// tests/expectations/format.json): a snapshot with pinned host memory shows both devices, the
// host named "host (pinned)" with its own overview; an FX-augmented snapshot groups its
// compiled allocations under the original model code in the table, as `memsight table` does.
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
});
