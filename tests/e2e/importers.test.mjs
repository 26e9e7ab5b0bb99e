// End-to-end tests of the profiler's other memory outputs in Debian's headless Chromium: the
// real Kineto trace (a torch.profiler Chrome trace, gzipped) opens with its allocated curve
// on the timeline and its peak in the overview — the sum of its own CUDA memory events,
// computed here from the file — and says what it is; the real raw memory timeline opens with
// the profiler's categories as roles; a trace with no memory events says how to record one.
//
// Run with `./x test` (which builds dist/ first) or `node --test tests/e2e/importers.test.mjs`.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { describe, it } from 'node:test';

import { metrics, openFiles, REAL_FIXTURES, ROOT, sharedBrowser, waitSettled } from './helpers.mjs';

const KINETO = path.join(REAL_FIXTURES, 'other/pytorch__kineto__tb_plugin__samples__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz');
const RAW = path.join(REAL_FIXTURES, 'other/facebookresearch__HolisticTraceAnalysis__tests__data__memory_analysis__memory_timeline.raw.gz');
const NO_MEMORY = path.join(ROOT, 'tests/fixtures/kineto_no_memory.json');
const PEAK_TENSORS = path.join(ROOT, 'tests/fixtures/peak_tensors.json');
const WAIT = 60_000;
const shared = sharedBrowser();

describe('other profiler outputs', () => {
  it('opens the real Kineto trace with its curve and peak', { skip: !fs.existsSync(KINETO) && 'Kineto trace not found' }, async () => {
    const trace = JSON.parse(zlib.gunzipSync(fs.readFileSync(KINETO)).toString('utf8'));
    const events = trace.traceEvents
      .map((e, i) => [e, i])
      .filter(([e]) => e.name === '[memory]' && e.args?.['Device Type'] === 1)
      .sort(([a, i], [b, j]) => a.ts - b.ts || i - j);
    let sum = 0;
    let low = 0;
    let high = 0;
    for (const [e] of events) {
      sum += e.args.Bytes;
      low = Math.min(low, sum);
      high = Math.max(high, sum);
    }
    const { page, errors } = await shared.open({ viewport: { width: 1400, height: 1000 } });
    try {
      await openFiles(page, KINETO);
      assert.equal(await waitSettled(page), 'ready');
      const m = await metrics(page);
      assert.equal(Number(m['peak-allocated-bytes']), high - low);
      assert.equal(Number(m['trace-entries']), events.length);
      assert.match(await page.textContent('#era'), /torch\.profiler \(Kineto\) trace/);
      const warnings = await page.$$eval('[data-warning]', (w) => w.map((e) => e.dataset.warning));
      assert.ok(warnings.includes('cpu-memory-not-shown'), warnings.join(' '));
      // The timeline draws the curve up to the same peak.
      await page.waitForSelector('#timeline[data-ready="true"]', { timeout: WAIT });
      const peak = await page.$eval('#timeline', (e) => Number(e.dataset.peakBytes));
      assert.equal(peak, high - low);
      assert.ok(Number(await page.$eval('#timeline', (e) => e.dataset.elements)) > 4000);
      // A profiler trace records no allocator segments: no allocator state to show.
      await page.waitForSelector('#phases[data-ready="true"]', { timeout: WAIT });
      assert.equal(await page.$('#allocator-state'), null);
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });

  it('opens the real raw memory timeline with the profiler\'s categories as roles', { skip: !fs.existsSync(RAW) && 'raw memory timeline not found' }, async () => {
    const { page, errors } = await shared.open({ viewport: { width: 1400, height: 1000 } });
    try {
      await openFiles(page, RAW);
      assert.equal(await waitSettled(page), 'ready');
      assert.match(await page.textContent('#era'), /export_memory_timeline/);
      const m = await metrics(page);
      assert.equal(Number(m['peak-allocated-bytes']), 3082832104);
      await page.waitForSelector('#timeline[data-ready="true"]', { timeout: WAIT });
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });

  it('opens a memory profiler\'s peak tensors as a table with shapes and layers folded', async () => {
    const json = JSON.parse(fs.readFileSync(PEAK_TENSORS, 'utf8'));
    const sized = json['cuda:0'].tensors.filter((t) => Number.isInteger(t.size_bytes));
    const { page, errors } = await shared.open({ viewport: { width: 1500, height: 1000 } });
    try {
      await openFiles(page, PEAK_TENSORS);
      assert.equal(await waitSettled(page), 'ready');
      const m = await metrics(page);
      assert.equal(Number(m['peak-allocated-bytes']), sized.reduce((a, t) => a + t.size_bytes, 0));
      assert.match(await page.textContent('#era'), /peak tensors/);
      await page.waitForSelector('#allocations-table[data-ready="true"]', { timeout: WAIT });
      await page.waitForSelector('.table-grid.with-shapes');
      const shapes = await page.$$eval('.shape-cell', (cells) => cells.map((c) => c.textContent).sort());
      assert.deepEqual(shapes, sized.map((t) => JSON.stringify(t.shape).replaceAll(',', ', ')).sort());
      // Phases from the profiler: setup, forward, optimizer step.
      await page.waitForSelector('#phases[data-ready="true"]', { timeout: WAIT });
      const phases = await page.$$eval('#phases-table .phase-row', (rows) => rows.map((r) => r.dataset.phase));
      assert.deepEqual(phases, ['setup', 'forward', 'optimizer_step']);
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });

  it('says how to record memory when a trace has none', async () => {
    const { page } = await shared.open();
    try {
      await openFiles(page, NO_MEMORY);
      assert.equal(await waitSettled(page), 'failed');
      const text = await page.textContent('#error-report');
      assert.match(text, /no memory events/);
      assert.match(text, /profile_memory=True/);
    } finally {
      await page.context().close();
    }
  });
});
