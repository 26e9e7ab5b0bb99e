// Tables benchmark: loads generated snapshots into the built viewer in headless Chromium
// through the file input, then measures the allocations table and the allocator's state as a
// user meets them, every time from the user's action (run in the page) to the answer shown:
//   the table opening at load (every allocation alive at the peak, with the allocator's
//     history reconstructed for the block sizes), in the worker;
//   every allocation listed ("All"), then sorted by another column, and filtered by size;
//   regrouped by call site and by model module;
//   the source view: a call site's file opened (every listed allocation counted by line), then
//     another file of the same allocations;
//   scrolling: a screen further each step, until the new lines are in the page;
//   the allocator's state moved to arbitrary events (the slider);
//   the page's memory (the renderer hosting the page and its workers) once all that is done.
//
// Usage: node benches/table.mjs [--sizes 1M,6M] [--runs 2] [--depth 6-10] [--steps 40]
// Needs a release build in dist/ (./x build) and Debian's chromium (./x setup test).

import { openApp, openFiles, waitSettled } from '../tests/e2e/helpers.mjs';
import { mb, measureSizes, median, openMeasuredApp, option, parseCount, residentMiB } from './common.mjs';

const sizes = option('--sizes', '1M,6M').split(',').map(parseCount);
const runs = Number(option('--runs', '2'));
const [depthMin, depthMax] = option('--depth', '6-10').split('-').map(Number);
const steps = Number(option('--steps', '40'));
/** Events the allocator's state jumps to per run (fractions of the trace). */
const JUMPS = [0.1, 0.9, 0.3, 0.7, 0.5, 0.2, 0.8];

const targets = { sort: 300, filter: 300, group: 300, source: 300, scroll: 16, jump: 50, memory6M: 1536 };

/**
 * Runs in the page: does `act` (a function body run with `document`), then resolves with the
 * milliseconds until `selector`'s `data-answers` grows (the view's next answer is on screen)
 * and that view's `data-compute-ms` (the worker's part).
 */
function timeAnswer({ selector, act }) {
  const view = document.querySelector(selector);
  const before = Number(view.dataset.answers);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer in ${selector}`)), 120_000);
    const observer = new MutationObserver(() => {
      if (Number(view.dataset.answers) <= before) return;
      observer.disconnect();
      clearTimeout(timer);
      resolve({ total: performance.now() - start, worker: Number(view.dataset.computeMs) });
    });
    observer.observe(view, { attributes: true, attributeFilter: ['data-answers'] });
    const start = performance.now();
    new Function(act)();
  });
}

const TABLE = '#allocations-table';
const act = (page, selector, body) => page.evaluate(timeAnswer, { selector, act: body });
const change = (selector, value) => `const e = document.querySelector('${selector}'); e.value = ${JSON.stringify(value)}; e.dispatchEvent(new Event('change', { bubbles: true }));`;

/** Scrolls the table a screen at a time: ms until the new first line is in the page. */
function scrollSteps({ steps, line }) {
  const box = document.querySelector('#table-scroll');
  const times = [];
  return new Promise((resolve) => {
    let step = 0;
    const next = () => {
      if (step++ >= steps) return resolve(times);
      const top = box.scrollTop + box.clientHeight;
      const want = Math.floor(top / line);
      const start = performance.now();
      box.scrollTop = top;
      const check = () => {
        if (document.querySelector(`#allocations-table .tr[data-line="${want}"]`)) {
          times.push(performance.now() - start);
          requestAnimationFrame(next);
        } else {
          requestAnimationFrame(check);
        }
      };
      check();
    };
    next();
  });
}

async function measure({ browser, server, browserPid }, file) {
  const { context, page, pagePids } = await openMeasuredApp(browser, browserPid, server, openApp);
  try {
    await page.setViewportSize({ width: 1500, height: 1000 });
    await page.waitForTimeout(1000);
    await openFiles(page, file);
    const status = await waitSettled(page, 600_000);
    if (status !== 'ready') throw new Error(`${file}: ${status}`);
    await page.waitForSelector(`${TABLE}[data-ready="true"]`, { timeout: 600_000 });
    const open = Number(await page.$eval(TABLE, (e) => e.dataset.computeMs));
    const all = await act(page, TABLE, "document.querySelector('#table-scope-all').click()");
    const rows = Number(await page.$eval(TABLE, (e) => e.dataset.count));
    const sort = await act(page, TABLE, "document.querySelector('#table-sort-requested').click()");
    const resort = await act(page, TABLE, "document.querySelector('#table-sort-allocated').click()");
    const filter = await act(page, TABLE, change('#table-min-size', '1 MiB'));
    const unfilter = await act(page, TABLE, change('#table-min-size', ''));
    const callsite = await act(page, TABLE, change('#table-group-by', 'callsite'));
    // Stacks cut to a few frames (--depth 6-10) hold no Python code: no source view then.
    const placed = await page.waitForSelector(`${TABLE} .source-open`, { state: 'attached', timeout: 5_000 }).catch(() => null);
    let source = { total: NaN, worker: NaN };
    let sourceFile = { total: NaN };
    if (placed) {
      source = await act(page, '#source-view', `document.querySelector('${TABLE} .source-open').click()`);
      const files = await page.$$eval('#source-file option', (os) => os.map((o) => o.value));
      const shown = await page.$eval('#source-view', (e) => e.dataset.path);
      sourceFile = await act(page, '#source-view', change('#source-file', files.find((f) => f !== shown) ?? shown));
    }
    const module = await act(page, TABLE, change('#table-group-by', 'module'));
    await act(page, TABLE, change('#table-group-by', ''));
    await page.$eval('#table-scroll', (e) => e.scrollIntoView({ block: 'center' }));
    const scroll = await page.evaluate(scrollSteps, { steps, line: 26 });

    await page.waitForSelector('#allocator-state[data-ready="true"]', { timeout: 600_000 });
    const states = Number(await page.$eval('#allocator-state', (e) => e.dataset.states));
    const jumps = [];
    for (const f of JUMPS) {
      jumps.push(await act(page, '#allocator-state', change('#allocator-slider', String(Math.floor(f * (states - 1))))));
    }
    const memory = residentMiB(pagePids);
    return {
      rows,
      open,
      all: all.total,
      sort: median([sort.total, resort.total]),
      sortWorker: median([sort.worker, resort.worker]),
      filter: median([filter.total, unfilter.total]),
      filterWorker: median([filter.worker, unfilter.worker]),
      callsite: callsite.total,
      module: module.total,
      groupWorker: median([callsite.worker, module.worker]),
      source: source.total,
      sourceWorker: source.worker,
      sourceFile: sourceFile.total,
      scroll: median(scroll),
      scrollWorst: Math.max(...scroll),
      jump: median(jumps.map((j) => j.total)),
      jumpWorker: median(jumps.map((j) => j.worker)),
      memory,
    };
  } finally {
    await context.close();
  }
}

const rows = await measureSizes({ sizes, runs, depthMin, depthMax }, measure, ({ entries, bytes, results }) => {
  const pick = (f) => median(results.map(f));
  const keys = Object.keys(results[0]);
  const row = Object.fromEntries(keys.map((k) => [k, pick((x) => x[k])]));
  row.memory = Math.max(...results.map((x) => x.memory));
  row.entries = entries;
  row.bytes = bytes;
  console.error(`${entries}: ${row.rows} rows, sorted in ${row.sort.toFixed(0)} ms, filtered in ${row.filter.toFixed(0)} ms, grouped in ${row.module.toFixed(0)} ms, scroll ${row.scroll.toFixed(1)} ms, jump ${row.jump.toFixed(1)} ms, ${row.memory.toFixed(0)} MiB`);
  return row;
});

const check = (ok) => (ok ? '✓' : '✗');
const ms = (x) => (Number.isNaN(x) ? 'n/a' : x < 10 ? x.toFixed(1) : x.toFixed(0));
console.log(`Tables benchmark: ${runs} run(s) per size, medians, ${depthMin}–${depthMax} frames per traceback; headless Chromium; times from the action in the page to the answer on screen (the worker's part in brackets); ${steps} scroll steps and ${JUMPS.length} allocator jumps per run.`);
console.log(`Targets: sorting or filtering every row ≤ ${targets.sort} ms; regrouping ≤ ${targets.group} ms; a file of the source view over every row ≤ ${targets.source} ms; a scroll step ≤ ${targets.scroll} ms; the allocator's state at another event ≤ ${targets.jump} ms; page memory at 6M ≤ ${targets.memory6M} MiB.\n`);
console.log('| entries | file MB | rows (all) | table at load, worker (ms) | every row listed (ms) | sort (ms) | filter by size (ms) | group by call site (ms) | group by module (ms) | source view over every row / another file (ms) | scroll step: median / worst (ms) | allocator jump (ms) | page memory (MiB) |');
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  const judged = (x, target) => (Number.isNaN(x) ? 'n/a' : `${ms(x)} ${check(x <= target)}`);
  const memory = `${r.memory.toFixed(0)}${r.entries === 6e6 ? ' ' + check(r.memory <= targets.memory6M) : ''}`;
  console.log(`| ${r.entries.toLocaleString('en')} | ${mb(r.bytes).toFixed(1)} | ${r.rows.toLocaleString('en')} | ${ms(r.open)} | ${ms(r.all)} | ${judged(r.sort, targets.sort)} (${ms(r.sortWorker)}) | ${judged(r.filter, targets.filter)} (${ms(r.filterWorker)}) | ${judged(r.callsite, targets.group)} | ${judged(r.module, targets.group)} (${ms(r.groupWorker)}) | ${judged(r.source, targets.source)} (${ms(r.sourceWorker)}) / ${ms(r.sourceFile)} | ${judged(r.scroll, targets.scroll)} / ${ms(r.scrollWorst)} | ${judged(r.jump, targets.jump)} (${ms(r.jumpWorker)}) | ${memory} |`);
}
console.log('\nTargets apply at 1M entries (memory at 6M); worker times come from performance.now() in the worker, which browsers round to 0.1 ms.');
