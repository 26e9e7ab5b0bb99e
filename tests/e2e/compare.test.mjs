// End-to-end tests of files side by side in Debian's headless Chromium: several real
// snapshots opened at once show as the files table, whose numbers are each file's own
// overview and CPython's; labels, sorting and the Markdown and CSV downloads; two files
// compared give the command line's deltas (and a file against itself, zero everywhere); a
// folder of rank files reads ranks and iterations and flags the outlier rank, which opens its
// views on a click.
//
// Run with `./x test` (which builds dist/ and the command line first) or
// `node --test tests/e2e/compare.test.mjs`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';

import { EXPECTATIONS, metrics, REAL_FIXTURES, ROOT, sharedBrowser, waitSettled } from './helpers.mjs';

const FORWARD = 'kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_forward_mixed.pickle';
const FULL_STEP = 'kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_fullstep_.pickle';
const SMALL = 'silmont2000__assignment2-systems__mem_snapshot.pickle';
const BIGGER = 'silmont2000__assignment2-systems__memory_forward_bf16_128.pickle';
// With the four above, eight real runs on one axis.
const MORE_RUNS = [
  'Wedsonlin__assignment2-systems__results__medium_1024_inference_memory_snapshot.pickle',
  'Yiyi-philosophy__LLM-inference__oom_snapshot.pickle',
  'ZijianDu__Attention__memory@c005a26.pickle',
  'kkaitlyn111__cs336-a2-systems__memory_snapshot.pickle',
];
const NAMES = [FORWARD, FULL_STEP, SMALL, BIGGER, ...MORE_RUNS];
const WAIT = 60_000;

const missing = NAMES.filter((n) => !fs.existsSync(path.join(REAL_FIXTURES, n)));
const skip = missing.length ? `${missing.join(', ')} not found in ${REAL_FIXTURES}` : false;
const shared = sharedBrowser();
const expected = skip ? {} : JSON.parse(fs.readFileSync(EXPECTATIONS, 'utf8'));
const expectedFiles = expected.files ?? expected;
const real = (name) => path.join(REAL_FIXTURES, name);

/** What `memsight <args…> --json` prints. */
function cli(...args) {
  const json = execFileSync('cargo', ['run', '-q', '-p', 'memsight-cli', '--', ...args, '--json'], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  return JSON.parse(json);
}

/** The files table's rows: their data attributes and each cell's exact value by column. */
const tableRows = (page) => page.$$eval('#files-table .files-row', (rows) => rows.map((r) => ({
  file: r.dataset.fileId,
  name: r.dataset.name,
  device: Number(r.dataset.device),
  outlier: r.dataset.outlier === 'true',
  cells: Object.fromEntries([...r.querySelectorAll('td[data-column]')].map((c) => [c.dataset.column, c.dataset.value])),
})));

async function waitRows(page, n) {
  await page.waitForSelector(`#files-view[data-rows="${n}"][data-waiting="0"]`, { timeout: WAIT });
}

describe('files side by side', { skip }, () => {
  it('several files opened at once show as a table of each file\'s own overview numbers', async () => {
    const { page, errors } = await shared.open({ viewport: { width: 1500, height: 1000 } });
    try {
      await page.setInputFiles('#file-input', [real(FORWARD), real(FULL_STEP), real(SMALL)]);
      await waitRows(page, 3);
      const rows = await tableRows(page);
      assert.deepEqual(rows.map((r) => r.name), [FORWARD, FULL_STEP, SMALL]);
      for (const row of rows) {
        const exp = expectedFiles[row.name].devices[String(row.device)];
        assert.equal(row.cells.peak_allocated_bytes, String(exp.peak_allocated_bytes), row.name);
        assert.equal(row.cells.reserved_at_peak_bytes, String(exp.reserved_at_peak_bytes), row.name);
        assert.equal(row.cells.peak_reserved_bytes, String(exp.peak_reserved_bytes), row.name);
        assert.equal(row.cells.allocated_end_bytes, String(exp.allocated_bytes), row.name);
        assert.equal(row.cells.reserved_end_bytes, String(exp.reserved_bytes), row.name);
        assert.equal(row.cells.trace_entries, String(exp.trace_entries), row.name);
      }
      // Each row is the file's own overview: open it and read the overview's numbers.
      for (const row of rows) {
        await page.click(`#files-table .files-row[data-file-id="${row.file}"] .open-file`);
        assert.equal(await waitSettled(page), 'ready');
        const m = await metrics(page);
        assert.equal(String(m['peak-allocated-bytes']), row.cells.peak_allocated_bytes);
        assert.equal(String(m['efficiency-at-peak-ppm']), row.cells.efficiency_at_peak_ppm);
        assert.equal(String(m['time-span-us']), row.cells.time_span_us);
        await page.click('#show-files');
        await waitRows(page, 3);
      }
      // The command line prints the same rows, role totals included.
      const printed = cli('files', real(FORWARD), real(FULL_STEP), real(SMALL)).files;
      for (const [i, row] of rows.entries()) {
        for (const [k, role] of ['parameters', 'gradients', 'optimizer_state', 'activations'].entries()) {
          const cell = row.cells[`${role}_at_peak_bytes`];
          if (cell !== undefined) assert.equal(cell, String(printed[i].roles_at_peak[k]), `${row.name} ${role}`);
        }
      }

      // Sorting by peak allocated, largest first.
      await page.click('#files-table th[data-column="peak_allocated_bytes"] .sort-button');
      const sorted = (await tableRows(page)).map((r) => Number(r.cells.peak_allocated_bytes));
      assert.deepEqual(sorted, [...sorted].sort((a, b) => b - a));
      assert.equal(await page.$eval('#files-table th[data-column="peak_allocated_bytes"]', (e) => e.getAttribute('aria-sort')), 'descending');

      // A label replaces the name in the list, the table and its exports.
      const first = page.locator('#files-table .files-row').first();
      const id = await first.getAttribute('data-file-id');
      await first.locator('.label-input').fill('ctx 128 / full step');
      await first.locator('.label-input').press('Enter');
      await page.waitForFunction((id) => document.querySelector(`.file-item[data-file-id="${id}"] .file-name`)?.textContent === 'ctx 128 / full step', id);
      const [md] = await Promise.all([page.waitForEvent('download'), page.click('#files-markdown')]);
      const markdown = fs.readFileSync(await md.path(), 'utf8');
      assert.match(markdown, /^\| File \| Device \| Peak allocated \|/);
      assert.match(markdown, /\| ctx 128 \/ full step \| cuda:0 \| 51\.0 GiB \|/);
      const [csv] = await Promise.all([page.waitForEvent('download'), page.click('#files-csv')]);
      const lines = fs.readFileSync(await csv.path(), 'utf8').trim().split('\n');
      assert.equal(lines.length, 4);
      const header = lines[0].split(',');
      const at = header.indexOf('peak_allocated_bytes');
      assert.equal(lines[1].split(',')[at], String(expectedFiles[FULL_STEP].devices['0'].peak_allocated_bytes));
      assert.equal(lines[1].split(',')[header.indexOf('file')], 'ctx 128 / full step');
      // The chart follows the sorted column.
      await page.waitForSelector('#files-chart[data-draws]');
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });

  it('compares two files with the command line\'s deltas, and a file with itself as zero', async () => {
    const { page, errors } = await shared.open({ viewport: { width: 1500, height: 1000 } });
    try {
      await page.setInputFiles('#file-input', [real(FORWARD), real(FULL_STEP)]);
      await waitRows(page, 2);
      await page.click('#show-compare');
      await page.selectOption('#compare-a', { index: 0 });
      await page.selectOption('#compare-b', { index: 1 });
      await page.waitForSelector('#compare-view[data-ready="true"]', { timeout: WAIT });
      const printed = cli('compare', real(FORWARD), real(FULL_STEP)).comparison;
      const row = (table, attr, key) => page.$eval(`#${table} tr[${attr}="${key}"]`, (r) => ({ a: r.dataset.a, b: r.dataset.b, delta: r.dataset.delta }));
      const peak = await row('compare-metrics', 'data-key', 'peak-allocated-bytes');
      const a = expectedFiles[FORWARD].devices['0'].peak_allocated_bytes;
      const b = expectedFiles[FULL_STEP].devices['0'].peak_allocated_bytes;
      assert.deepEqual(peak, { a: String(a), b: String(b), delta: String(b - a) });
      const optimizer = await row('compare-roles', 'data-category', 'optimizer_state');
      const cliOptimizer = printed.roles.find((r) => r.key === 'optimizer_state');
      assert.deepEqual(optimizer, { a: '0', b: String(cliOptimizer.b_bytes), delta: String(cliOptimizer.delta_bytes) });
      // The call sites that changed most, in the command line's order.
      const sites = await page.$$eval('#compare-call-sites .keyed-row', (rows) => rows.slice(0, 5).map((r) => [r.dataset.key, r.dataset.change, Number(r.dataset.delta)]));
      const cliSites = printed.call_sites.filter((s) => s.change !== 'same').slice(0, 5).map((s) => [s.key, s.change, s.delta_bytes]);
      assert.deepEqual(sites, cliSites);
      const modules = await page.$eval('#compare-modules', (e) => Number(e.dataset.rows));
      assert.equal(modules, printed.modules.length);
      await page.waitForSelector('#compare-curves[data-draws]');
      await page.click('#compare-axis-time');
      // Swapped, every delta changes sign.
      await page.click('#compare-swap');
      await page.waitForFunction(() => document.querySelector('#compare-metrics tr[data-key="peak-allocated-bytes"]')?.dataset.delta?.startsWith('-'));
      // A file compared with itself: zero everywhere, nothing changed.
      await page.selectOption('#compare-b', { index: 1 });
      await page.selectOption('#compare-a', { index: 1 });
      await page.waitForSelector('#compare-same');
      const deltas = await page.$$eval('#compare-view [data-delta]', (rows) => rows.map((r) => r.dataset.delta).filter((d) => d !== ''));
      assert.ok(deltas.length > 10);
      assert.ok(deltas.every((d) => d === '0'), deltas.join(' '));
      assert.equal(await page.$eval('#compare-call-sites', (e) => e.dataset.changed), '0');
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });

  it('draws every run on one axis with its peak, as the command line\'s report summary does, and opens a run on a click', async () => {
    const runs = [SMALL, BIGGER, FORWARD, FULL_STEP, ...MORE_RUNS];
    const { page, errors } = await shared.open({ viewport: { width: 1500, height: 1000 } });
    try {
      await page.setInputFiles('#file-input', runs.map(real));
      await page.waitForFunction((n) => {
        const view = document.querySelector('#files-view');
        return view && view.dataset.waiting === '0' && Number(view.dataset.rows) >= n
          && document.querySelector('#files-runs-legend')?.dataset.runs === view.dataset.rows;
      }, runs.length, { timeout: WAIT });
      await page.waitForSelector('#files-runs[data-draws]', { timeout: WAIT });
      const rows = await tableRows(page);
      const legend = () => page.$$eval('#files-runs-legend li', (items) => items.map((i) => ({
        file: i.dataset.fileId, device: Number(i.dataset.device), peak: i.dataset.peak, share: Number(i.dataset.peakSharePpm),
      })));
      const absolute = await legend();
      assert.equal(absolute.length, rows.length);
      // Each run's highest point is its peak allocated, the table's.
      for (const run of absolute) {
        const row = rows.find((r) => r.file === run.file && r.device === run.device);
        assert.equal(run.peak, row.cells.peak_allocated_bytes, row.name);
        assert.ok(run.share >= 0 && run.share <= 1_000_000);
      }
      // The command line's summary draws the same runs with the same peaks.
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memsight-runs-'));
      execFileSync('cargo', ['run', '-q', '--manifest-path', path.join(ROOT, 'Cargo.toml'), '-p', 'memsight-cli', '--', 'report', ...runs, '-o', dir], { cwd: REAL_FIXTURES });
      const index = fs.readFileSync(path.join(dir, 'index.html'), 'utf8');
      assert.match(index, /<figure class="chart runs" data-chart="runs"[^>]*>\s*<svg/);
      const summaryPeaks = new Map([...index.matchAll(/<tr data-run="([^"]+)" data-run-device="(\d+)">.*?data-bytes="(-?\d+)"/gs)].map((m) => [`${m[1]}:${m[2]}`, m[3]]));
      assert.equal(summaryPeaks.size, rows.length);
      for (const row of rows) {
        assert.equal(summaryPeaks.get(`${row.name}:${row.device}`), row.cells.peak_allocated_bytes, row.name);
      }
      // From each run's start: no run's change is above its bytes.
      await page.click('#files-runs-from-start');
      await page.waitForFunction((before) => [...document.querySelectorAll('#files-runs-legend li')].some((li, i) => li.dataset.peak !== before[i]), absolute.map((r) => r.peak));
      const fromStart = await legend();
      for (const [i, run] of fromStart.entries()) assert.ok(BigInt(run.peak) <= BigInt(absolute[i].peak), `${run.peak} ≤ ${absolute[i].peak}`);
      // Over time when every run has times, else the button says why not.
      const overTime = page.locator('#files-runs-time');
      if (await overTime.isEnabled()) {
        await overTime.click();
      } else {
        assert.match(await overTime.getAttribute('title'), /has no times/);
      }
      await page.click('#files-runs-absolute');
      // A run's name opens its file.
      const opened = rows[2];
      await page.click(`#files-runs-legend li[data-file-id="${opened.file}"] button`);
      assert.equal(await waitSettled(page), 'ready');
      assert.equal(await page.textContent('#snapshot .file-title'), opened.name);
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });

  it('opens a folder of rank files, flags the outlier rank and opens it on a click', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memsight-ranks-'));
    const iteration = path.join(dir, 'iteration_3');
    fs.mkdirSync(iteration);
    for (const rank of [0, 1, 2, 3, 4, 5]) {
      fs.copyFileSync(real(SMALL), path.join(iteration, `rank${rank}_memory_snapshot.pickle`));
    }
    fs.copyFileSync(real(BIGGER), path.join(iteration, 'rank6_memory_snapshot.pickle'));
    const { page, errors } = await shared.open({ viewport: { width: 1500, height: 1000 } });
    try {
      await page.setInputFiles('#folder-input', dir);
      await waitRows(page, 7);
      const rows = await tableRows(page);
      assert.deepEqual(rows.map((r) => r.cells.rank), ['0', '1', '2', '3', '4', '5', '6']);
      assert.ok(rows.every((r) => r.cells.iteration === '3'));
      assert.deepEqual(rows.filter((r) => r.outlier).map((r) => r.cells.rank), ['6']);
      const summary = await page.$eval('#iteration-summaries li', (e) => ({ iteration: e.dataset.iteration, outliers: e.dataset.outliers, text: e.textContent }));
      assert.deepEqual([summary.iteration, summary.outliers], ['3', '1']);
      assert.match(summary.text, /7 ranks.*outlier: rank 6\./);
      await page.click('#files-table .files-row[data-outlier="true"] .open-file');
      assert.equal(await waitSettled(page), 'ready');
      const title = await page.$eval('#snapshot .file-title', (e) => e.textContent);
      assert.match(title, /iteration_3\/rank6_memory_snapshot\.pickle$/);
      const m = await metrics(page);
      assert.equal(Number(m['peak-allocated-bytes']), expectedFiles[BIGGER].devices['0'].peak_allocated_bytes);
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

const FULL_STEP_SCOPES = 'LINYUNLinYun__CS336-assignment2-systems__cs336_systems__results__memory_profiles__xl_ctx512_full_step_bf16.pickle';

describe('phase report', { skip: !fs.existsSync(real(FULL_STEP_SCOPES)) && `${FULL_STEP_SCOPES} not found` }, () => {
  it('lists the command line\'s phases and scopes, and a click shows a phase\'s peak', async () => {
    const { page, errors } = await shared.open({ viewport: { width: 1500, height: 1000 } });
    try {
      await page.setInputFiles('#file-input', real(FULL_STEP_SCOPES));
      assert.equal(await waitSettled(page), 'ready');
      await page.waitForSelector('#phases[data-ready="true"]', { timeout: WAIT });
      const printed = cli('phases', real(FULL_STEP_SCOPES)).devices['0'];
      const rows = (table) => page.$$eval(`#${table} .phase-row`, (trs) => trs.map((r) => ({ ...r.dataset })));
      const shown = await rows('phases-table');
      assert.equal(shown.length, printed.rows.length);
      for (const [i, row] of printed.rows.entries()) {
        const got = shown[i];
        assert.equal(got.phase, row.phase ?? '');
        assert.equal(got.iteration, row.iteration === null ? '' : String(row.iteration));
        for (const [attr, key] of [['before', 'before_bytes'], ['after', 'after_bytes'], ['delta', 'delta_bytes'], ['peak', 'peak_bytes'], ['allocated', 'allocated_bytes'], ['freed', 'freed_bytes']]) {
          assert.equal(got[attr], String(row[key]), `${row.label} ${key}`);
        }
      }
      assert.deepEqual((await rows('scopes-table')).map((r) => r.label), printed.scopes.map((s) => s.label));
      assert.equal(await page.$eval('#phases-source', (e) => e.dataset.source), 'annotations');
      // The forward's peak, picked on the timeline, is what the breakdown shows.
      const forward = printed.rows.findIndex((r) => r.phase === 'forward');
      await page.click(`#phases-table .phase-row:nth-child(${forward + 1})`);
      const state = String(printed.rows[forward].peak_event + 1);
      await page.waitForFunction((s) => document.querySelector('#breakdown-moment')?.dataset.state === s, state, { timeout: WAIT });
      assert.equal(await page.$eval('#breakdown-moment', (e) => e.dataset.liveBytes), String(printed.rows[forward].peak_bytes));
      const [md] = await Promise.all([page.waitForEvent('download'), page.click('#phases-markdown')]);
      const markdown = fs.readFileSync(await md.path(), 'utf8');
      assert.match(markdown, /\| Forward \| 1 \|/);
      assert.match(markdown, /record_function scopes/);
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });
});
