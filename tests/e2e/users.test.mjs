// End-to-end tests of what misled users trying the page on real snapshots it had never seen,
// each doing what they did (real clicks and keys on a real fixture) and asserting what they
// should have seen: one efficiency everywhere, no alarm about a cache that is reused, filters
// that answer as you type, pinning that leaves the peak alone, allocations from before the
// trace said to be so.
//
// Files are real snapshots read from ../shared/fixtures/real (the tests skip when absent).
// Run with `./x test` (which builds dist/ first) or `node --test tests/e2e/users.test.mjs`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

import { clickSeries, openFiles, REAL_FIXTURES, ROOT, sharedBrowser, waitSettled } from './helpers.mjs';

/** A CS336 XL full training step recorded from a later iteration: its cache is reused. */
const HEALTHY_STEP = 'LINYUNLinYun__CS336-assignment2-systems__cs336_systems__results__memory_profiles__xl_ctx512_full_step_bf16.pickle';
/** A medium model's inference, small enough to type into quickly. */
const MEDIUM = 'Wedsonlin__assignment2-systems__results__medium_1024_inference_memory_snapshot.pickle';
/** A CS336 full step (fp32, 51 GiB) whose reserve is flat from the first event. */
const FULL_STEP = 'kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_fullstep_.pickle';
/** A CS336 XL forward on four GPUs of which three used no memory. */
const FOUR_DEVICES = 'LINYUNLinYun__CS336-assignment2-systems__cs336_systems__results__memory_profiles__xl_ctx128_forward_bf16@e1139f5.pickle';
/** Two CS336 runs whose names differ only in the middle. */
const FORWARD_MIXED = 'kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_forward_mixed.pickle';
/** Four GPUs, of which cuda:1 ran out of memory (the file opens on it). */
const MULTI_DEVICE_OOM = 'Constructor-Sun__code_location__memory_snapshot.pickle';
const WAIT = 20_000;

const have = (name) => fs.existsSync(path.join(REAL_FIXTURES, name));
const skipWithout = (...names) => names.find((n) => !have(n)) && `${names.find((n) => !have(n))} not found in ${REAL_FIXTURES}`;
/** `memsight <args…>` as JSON, from the same core the page runs. */
const cli = (...args) => JSON.parse(execFileSync('cargo', ['run', '-q', '-p', 'memsight-cli', '--', ...args], { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 28 }));

const shared = sharedBrowser();

/** Opens real fixtures in a fresh page; resolves once the last one is loaded. */
async function open(names, width = 1440, height = 900) {
  const app = await shared.open({ viewport: { width, height } });
  const files = [names].flat();
  await openFiles(app.page, files.map((n) => path.join(REAL_FIXTURES, n)));
  if (files.length === 1) {
    assert.equal(await waitSettled(app.page), 'ready');
  } else {
    // Several open side by side: each is ready when listed as such.
    await app.page.waitForFunction((n) => document.querySelectorAll('.file-item[data-status="ready"]').length === n, files.length, { timeout: 60_000 });
  }
  return app;
}

describe('what users stumbled on', () => {
  it('shows one efficiency, at the peak, the same in the overview, the gauge, the report and the command line', { skip: skipWithout(FULL_STEP) }, async () => {
    const { context, page, errors } = await open(FULL_STEP);
    try {
      const overview = await page.$eval('[data-metric="efficiency-at-peak-ppm"]', (e) => Number(e.dataset.value));
      await page.waitForSelector('#efficiency[data-ppm]', { timeout: WAIT });
      const gauge = await page.$eval('#efficiency', (e) => Number(e.dataset.ppm));
      assert.equal(gauge, overview, 'the gauge shows the overview\'s efficiency');
      assert.equal(await page.textContent('#chart-efficiency h3'), 'Efficiency at the peak');
      // Reserved is flat from the first event here: the worst moment is not the one shown.
      assert.ok(overview > 800_000, `efficiency at the peak ${overview} ppm`);
      // No unlabelled efficiency anywhere in the overview.
      const keys = await page.$$eval('[data-metric]', (es) => es.map((e) => e.dataset.metric));
      assert.deepEqual(keys.filter((k) => k.startsWith('efficiency')).sort(), ['efficiency-at-end-ppm', 'efficiency-at-peak-ppm']);

      // Training's arithmetic beside the estimate: one gradient per parameter, AdamW's two states.
      const training = await page.textContent('#training-checks[data-passes="true"]');
      assert.ok(training.includes('gradients 1.00× parameters (ok)') && training.includes('AdamW keeps 2 per parameter (ok)'), training);

      const [report] = await Promise.all([page.waitForEvent('download'), page.click('#breakdown-report')]);
      const text = fs.readFileSync(await report.path(), 'utf8');
      const line = text.split('\n').find((l) => l.startsWith('- **Efficiency at the peak:**'));
      assert.ok(line, 'the report names the efficiency by its moment');
      assert.ok(line.includes(`${(overview / 10_000).toFixed(1)}%`), line);
      assert.ok(!text.includes('**Efficiency:**'), 'no other efficiency in the report');
      assert.ok(text.includes(`Training's arithmetic: ${training.replace("Training's arithmetic: ", '')}`), 'the report says the same checks');

      const fromCli = cli('report', path.join(REAL_FIXTURES, FULL_STEP), '--json');
      assert.equal(fromCli.devices['0'].summary.efficiency_at_peak_ppm, overview);
      const over = cli('overview', path.join(REAL_FIXTURES, FULL_STEP), '--json');
      assert.equal(over.devices['0']['efficiency-at-peak-ppm'], overview);
      assert.equal(over.devices['0']['efficiency-ppm'], undefined, 'no unlabelled efficiency in the command line');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('redacts the paths of a downloaded report and table when asked, as the command line does, and remembers it', { skip: skipWithout(MEDIUM) }, async () => {
    const { context, page, errors } = await open(MEDIUM);
    try {
      const home = '/home/lin/';
      assert.equal(await page.isChecked('#redact-paths'), false, 'off until asked');
      const [plain] = await Promise.all([page.waitForEvent('download'), page.click('#breakdown-report')]);
      assert.ok(fs.readFileSync(await plain.path(), 'utf8').includes(home), 'the snapshot\'s paths are in a report by default');

      await page.check('#redact-paths');
      const [report] = await Promise.all([page.waitForEvent('download'), page.click('#breakdown-report')]);
      const text = fs.readFileSync(await report.path(), 'utf8');
      assert.ok(!text.includes(home) && !text.includes('/lin/'), 'no home folder or user name');
      assert.ok(text.includes('`<home>/cs336/assignment2-systems/'), 'the code is still named');
      // The same report as `memsight report --redact` prints.
      const fromCli = execFileSync('cargo', ['run', '-q', '--manifest-path', path.join(ROOT, 'Cargo.toml'), '-p', 'memsight-cli', '--', 'report', '--redact', MEDIUM], { cwd: REAL_FIXTURES, encoding: 'utf8', maxBuffer: 1 << 28 });
      assert.equal(text, fromCli);

      await page.waitForSelector('#allocations-table[data-ready="true"]', { timeout: WAIT });
      const [csv] = await Promise.all([page.waitForEvent('download'), page.click('#table-csv')]);
      const rows = fs.readFileSync(await csv.path(), 'utf8');
      assert.ok(!rows.includes(home) && rows.includes('<home>/'), 'the table\'s CSV is redacted too');

      await page.reload();
      await page.waitForSelector('#redact-paths', { timeout: WAIT });
      assert.equal(await page.isChecked('#redact-paths'), true, 'remembered in this browser');
      await page.uncheck('#redact-paths');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('raises no cached-memory finding on a training step whose cache is reused', { skip: skipWithout(HEALTHY_STEP) }, async () => {
    const { context, page, errors } = await open(HEALTHY_STEP);
    try {
      await page.waitForSelector('#findings', { timeout: WAIT });
      const kinds = await page.$$eval('#findings [data-finding]', (es) => es.map((e) => e.dataset.finding));
      assert.ok(!kinds.includes('cached-memory') && !kinds.includes('fragmentation'), kinds.join(', '));
      const text = await page.textContent('#findings');
      assert.ok(!/reserved but not allocated|cached free blocks at the end/.test(text), text);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('applies the table filter and the timeline search as the user types, Enter walking the matches', { skip: skipWithout(MEDIUM) }, async () => {
    const { context, page, errors } = await open(MEDIUM);
    try {
      const count = () => page.$eval('#allocations-table', (e) => Number(e.dataset.count));
      await page.waitForSelector('#allocations-table[data-count]', { timeout: WAIT });
      await page.click('#table-scope-all');
      await page.waitForFunction(() => document.querySelector('#table-scope-all').getAttribute('aria-pressed') === 'true');
      const all = await count();
      // Typed, no Enter: the table answers once typing pauses.
      await page.click('#table-filter');
      await page.keyboard.type('softmax', { delay: 30 });
      await page.waitForFunction((n) => Number(document.querySelector('#allocations-table').dataset.count) < n, all, { timeout: WAIT });
      const softmax = cli('table', path.join(REAL_FIXTURES, MEDIUM), '--json', '--scope', 'all', '--filter', 'softmax').devices['0'];
      await page.waitForFunction((n) => Number(document.querySelector('#allocations-table').dataset.count) === n, softmax.totals.count, { timeout: WAIT });
      // Cleared by typing too.
      await page.fill('#table-filter', '');
      await page.waitForFunction((n) => Number(document.querySelector('#allocations-table').dataset.count) === n, all, { timeout: WAIT });

      // The timeline's search counts its matches as it is typed, without moving the view.
      const view = () => page.$eval('#timeline', (e) => [e.dataset.viewStart, e.dataset.viewEnd].join('-'));
      const before = await view();
      await page.click('#timeline-search');
      await page.keyboard.type('softmax', { delay: 30 });
      await page.waitForFunction(() => /of/.test(document.querySelector('#timeline-search-count').textContent), null, { timeout: WAIT });
      assert.match(await page.textContent('#timeline-search-count'), /^1 of /);
      assert.equal(await view(), before, 'typing does not move the view');
      assert.equal(await page.$eval('#timeline', (e) => e.dataset.pinned), '', 'nor pin anything');
      // Enter goes to the first match, then the next.
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => document.querySelector('#timeline').dataset.pinned !== '', null, { timeout: WAIT });
      const first = await page.$eval('#timeline', (e) => e.dataset.pinned);
      assert.match(await page.textContent('#timeline-search-count'), /^1 of /);
      await page.keyboard.press('Enter');
      await page.waitForFunction((p) => document.querySelector('#timeline').dataset.pinned !== p, first, { timeout: WAIT });
      assert.match(await page.textContent('#timeline-search-count'), /^2 of /);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('pins an allocation without moving the charts and the table off the peak; Shift+click picks a moment, said with the way back', { skip: skipWithout(MEDIUM) }, async () => {
    for (const [width, height] of [[1440, 900], [1024, 700]]) {
      const { context, page, errors } = await open(MEDIUM, width, height);
      try {
        await page.waitForSelector('#breakdown-moment', { timeout: WAIT });
        const peakState = await page.$eval('#breakdown-moment', (e) => e.dataset.state);
        // Pin an allocation: the largest at the peak, clicked where the timeline draws it.
        await page.locator('#timeline-canvas').scrollIntoViewIfNeeded();
        const box = await page.locator('#timeline-canvas').boundingBox();
        await page.locator('#timeline-canvas').click({ position: { x: box.width * 0.5, y: box.height * 0.8 } });
        await page.waitForFunction(() => document.querySelector('#timeline').dataset.pinned !== '', null, { timeout: WAIT });
        await page.waitForTimeout(300);
        assert.equal(await page.getAttribute('#breakdown-at-peak', 'aria-pressed'), 'true', 'the breakdown stays at the peak');
        assert.equal(await page.$eval('#breakdown-moment', (e) => e.dataset.state), peakState);
        assert.equal(await page.getAttribute('#table-scope-peak', 'aria-pressed'), 'true', 'the table stays at the peak');
        assert.equal(await page.$('#breakdown-moment-notice'), null, 'at the peak, nothing to say');

        // Shift+click picks the moment: said, with the way back.
        await page.locator('#timeline-canvas').click({ position: { x: box.width * 0.2, y: box.height * 0.5 }, modifiers: ['Shift'] });
        await page.waitForSelector('#breakdown-at-picked[aria-pressed="true"]', { timeout: WAIT });
        await page.waitForFunction((s) => document.querySelector('#breakdown-moment')?.dataset.state !== s, peakState, { timeout: WAIT });
        const notice = await page.textContent('#breakdown-moment-notice');
        assert.match(notice, /^Not the peak: showing the moment picked on the timeline \(after event [\d,]+\)/);
        assert.ok(await page.isVisible('#table-moment-notice'), 'the table says it too');
        await page.click('#breakdown-back-to-peak');
        await page.waitForFunction((s) => document.querySelector('#breakdown-moment')?.dataset.state === s, peakState, { timeout: WAIT });
        assert.equal(await page.$('#breakdown-moment-notice'), null);
        await page.click('#table-back-to-peak');
        await page.waitForSelector('#table-scope-peak[aria-pressed="true"]', { timeout: WAIT });
        assert.equal(await page.$('#table-moment-notice'), null);
        assert.deepEqual(errors, []);
      } finally {
        await context.close();
      }
    }
  });

  it('says an allocation from before the trace was freed, not made, by the code its stack names', { skip: skipWithout(HEALTHY_STEP) }, async () => {
    const file = path.join(REAL_FIXTURES, HEALTHY_STEP);
    const rows = cli('table', file, '--json', '--scope', 'all', '--limit', '100000').devices['0'].rows;
    const freed = rows.find((r) => r.alloc_event === null && r.free_event !== null && r.top_frame);
    assert.ok(freed, 'the run frees memory made before the trace');
    const { context, page, errors } = await open(HEALTHY_STEP);
    try {
      const hex = `0x${freed.address.toString(16)}`;
      // The table, filtered to its address: the frame is the code that freed it, read by its file.
      await page.waitForSelector('#allocations-table[data-count]', { timeout: WAIT });
      await page.click('#table-scope-all');
      await page.fill('#table-filter', hex);
      await page.press('#table-filter', 'Enter');
      const cell = `#allocations-table .tr.row[data-allocation="${freed.allocation}"] .frame-cell`;
      await page.waitForSelector(cell, { timeout: WAIT });
      const [file_, line, fn] = freed.top_frame.match(/([^/\\]+):(\d+):(.*)$/).slice(1);
      assert.equal(await page.textContent(cell), `freed by ${file_}:${line} ${fn}`);
      assert.equal(await page.getAttribute(cell, 'title'), `Made before the trace; freed by ${freed.top_frame}`);
      await page.click(cell);
      await page.waitForSelector('#table-detail-made-by', { timeout: WAIT });
      assert.equal(await page.textContent('#table-detail-made-by'), `before the trace; freed by ${freed.top_frame}`);
      // Pinned on the timeline, found by its address.
      await page.fill('#timeline-search', hex);
      await page.press('#timeline-search', 'Enter');
      await page.waitForSelector('#pinned-made-by', { timeout: WAIT });
      assert.match(await page.textContent('#pinned-made-by'), /^Made before the trace; freed by( PyTorch, in)? /);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('shows who made an allocation early in the table, on screen at 1440 and 1024 px, and gives groups their own header', { skip: skipWithout(MEDIUM) }, async () => {
    for (const [width, height] of [[1440, 900], [1024, 700]]) {
      const { context, page, errors } = await open(MEDIUM, width, height);
      try {
        await page.waitForSelector('#allocations-table .tr.row .frame-cell', { timeout: WAIT });
        const headers = await page.$$eval('#allocations-table .tr.header .sort-button', (bs) => bs.map((b) => b.textContent.replace(/ [▾▴]$/, '')));
        assert.deepEqual(headers.slice(0, 3), ['Size', 'Requested', 'Made by']);
        const { right, text } = await page.$eval('#allocations-table .tr.row .frame-cell', (c) => ({ right: c.getBoundingClientRect().right, text: c.querySelector('.frame-label').textContent }));
        assert.ok(right <= width, `the "Made by" cell ends at ${right} px, inside ${width} px`);
        assert.match(text, /^[^/]+\.py:\d+ \S+$/, 'read by file, line and function, not cut at the front');
        // Grouped, the groups get their own header, its columns over the groups' cells.
        assert.equal(await page.locator('#table-group-header').count(), 0);
        await page.selectOption('#table-group-by', 'callsite');
        await page.waitForSelector('#allocations-table .tr.group', { timeout: WAIT });
        const heads = await page.$$eval('#table-group-header .th', (ths) => ths.map((t) => [t.textContent, t.getBoundingClientRect().left]));
        assert.deepEqual(heads.map(([t]) => t), ['Group size', 'Requested', 'Share of the requested bytes', 'Call site · allocations']);
        const cells = await page.$eval('#allocations-table .tr.group', (g) => [...g.children].map((c) => c.getBoundingClientRect().left));
        assert.deepEqual(heads.map(([, left]) => Math.round(left)), cells.map(Math.round), 'each header over its cells');
        // The allocations' header stays, for the rows of an open group.
        assert.ok(await page.isVisible('#allocations-table .tr.rows-header #table-sort-top_frame'));
        assert.deepEqual(errors, []);
      } finally {
        await context.close();
      }
    }
  });

  it('lists devices that used no memory last, saying so, and tells newcomers to record before building the model', { skip: skipWithout(FOUR_DEVICES) }, async () => {
    const { context, page, errors } = await open(FOUR_DEVICES);
    try {
      const options = await page.$$eval('#device-picker option', (os) => os.map((o) => [o.value, o.textContent, o.dataset.unused]));
      assert.deepEqual(options, [
        ['0', 'cuda:0', 'false'],
        ['1', 'cuda:1 (no memory used)', 'true'],
        ['2', 'cuda:2 (no memory used)', 'true'],
        ['3', 'cuda:3 (no memory used)', 'true'],
      ]);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
    const app = await shared.open({ viewport: { width: 1440, height: 900 } });
    try {
      const snippet = await app.page.textContent('#welcome pre, .welcome pre, pre.code');
      assert.ok(snippet.indexOf('_record_memory_history') < snippet.indexOf('build_model'), 'recording starts before the model is built');
      assert.match(await app.page.textContent('#record-first-hint'), /Start recording before building the model/);
    } finally {
      await app.context.close();
    }
  });

  it('tells apart files whose names differ in the middle, lets them be renamed, and keeps each bar\'s colour when sorting', { skip: skipWithout(FORWARD_MIXED, FULL_STEP) }, async () => {
    const { context, page, errors } = await open([FORWARD_MIXED, FULL_STEP]);
    try {
      const shown = () => page.$$eval('.file-item .file-name', (es) => es.map((e) => e.textContent));
      assert.deepEqual(await shown(), ['forward_mixed', 'fullstep']);
      // Compare's pickers name them the same way.
      await page.click('#show-compare');
      await page.waitForSelector('#compare-a option', { state: 'attached', timeout: WAIT });
      assert.deepEqual(await page.$$eval('#compare-a option', (os) => os.map((o) => o.textContent)), ['forward_mixed', 'fullstep']);
      // So does the files table, whose bars keep their colours when it is sorted.
      await page.click('#show-files');
      await page.waitForFunction(() => document.querySelector('#files-view')?.dataset.rows === '2', null, { timeout: 60_000 });
      const colours = async () => Object.fromEntries((await page.getAttribute('#files-view', 'data-bar-colours')).split(';').map((p) => p.split('=')));
      const before = await colours();
      assert.equal(Object.keys(before).length, 2);
      assert.notEqual(...Object.values(before), 'two colours');
      for (const column of ['peak_allocated_bytes', 'file']) {
        await page.click(`#files-view th[data-column="${column}"] .sort-button`);
        await page.click(`#files-view th[data-column="${column}"] .sort-button`);
        assert.deepEqual(await colours(), before, `sorted by ${column}`);
      }
      // Renamed from the list: the new name is shown everywhere.
      await page.click('.file-item:first-child .file-rename');
      await page.waitForSelector('.file-rename-input', { timeout: WAIT });
      await page.keyboard.type('fwd mixed');
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => document.querySelector('.file-item .file-name').textContent === 'fwd mixed', null, { timeout: WAIT });
      await page.click('#show-compare');
      await page.waitForSelector('#compare-a option', { state: 'attached', timeout: WAIT });
      assert.deepEqual(await page.$$eval('#compare-a option', (os) => os.map((o) => o.textContent)), ['fwd mixed', 'fullstep']);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('reads the settings that tell files apart (ctx128, ctx512) as a column to sort by, as the command line does', { skip: skipWithout(FORWARD_MIXED, HEALTHY_STEP) }, async () => {
    const { context, page, errors } = await open([HEALTHY_STEP, FORWARD_MIXED]);
    try {
      await page.click('#show-files');
      await page.waitForFunction(() => document.querySelectorAll('#files-table .files-row').length === 2, null, { timeout: WAIT });
      assert.equal(await page.textContent('#files-table th[data-column="ctx"]'), 'ctx');
      const ctx = () => page.$$eval('#files-table .files-row td[data-column="ctx"]', (tds) => tds.map((t) => Number(t.dataset.value)));
      assert.deepEqual((await ctx()).sort(), [128, 512]);
      await page.click('#files-table th[data-column="ctx"] .sort-button');
      assert.deepEqual(await ctx(), [512, 128], 'largest first');
      await page.click('#files-table th[data-column="ctx"] .sort-button');
      assert.deepEqual(await ctx(), [128, 512], 'then smallest first');
      const json = cli('files', ...[HEALTHY_STEP, FORWARD_MIXED].map((n) => path.join(REAL_FIXTURES, n)), '--sort', 'ctx:asc', '--json');
      assert.deepEqual(json.files.map((r) => r.settings), [[['ctx', 128]], [['ctx', 512]]]);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('says which phase and iteration each side of a comparison peaks in, and compares at one phase', { skip: skipWithout(FORWARD_MIXED, FULL_STEP) }, async () => {
    const { context, page, errors } = await open([FORWARD_MIXED, FULL_STEP]);
    try {
      const [a, b] = [FORWARD_MIXED, FULL_STEP].map((n) => path.join(REAL_FIXTURES, n));
      await page.click('#show-compare');
      await page.waitForSelector('#compare-moments', { timeout: 60_000 });
      const moments = () => page.$eval('#compare-moments', (e) => ({ ...e.dataset }));
      // A forward-only run peaks in its forward, a full step in its optimizer step.
      const printed = cli('compare', a, b, '--json');
      assert.deepEqual(await moments(), {
        aPhase: printed.a.phase, aIteration: String(printed.a.iteration),
        bPhase: printed.b.phase, bIteration: String(printed.b.iteration),
      });
      assert.notEqual(printed.a.phase, printed.b.phase);
      assert.equal(await page.textContent('#compare-moments-differ'), printed.moments_differ);
      // At each run's forward: the same moment on both sides, the deltas the command line's.
      await page.selectOption('#compare-at', 'forward');
      await page.waitForFunction(() => document.querySelector('#compare-moments')?.dataset.bPhase === 'forward', null, { timeout: 60_000 });
      assert.equal(await page.$('#compare-moments-differ'), null, 'nothing to warn of');
      const atForward = cli('compare', a, b, '--json', '--at-phase', 'forward');
      assert.equal(atForward.b.phase, 'forward');
      const shown = await page.$$eval('#compare-roles tr[data-category]', (trs) => Object.fromEntries(trs.map((tr) => [tr.dataset.category, [tr.dataset.a, tr.dataset.b, tr.dataset.delta]])));
      const expected = atForward.comparison.roles.filter((r) => shown[r.key] !== undefined);
      assert.ok(expected.length > 0, 'the roles are listed');
      for (const row of expected) {
        assert.deepEqual(shown[row.key], [String(row.a_bytes), String(row.b_bytes), String(row.delta_bytes)], row.key);
      }
      // The overview's numbers stay the whole run's, and say so beside a phase.
      assert.equal(await page.textContent('#compare-metrics thead th'), 'Overview (the whole run\'s, not at the phase)');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('defines the allocator state\'s fragmentation wherever it is shown and lists the segments with the most unused memory first', { skip: skipWithout(MEDIUM) }, async () => {
    const { context, page, errors } = await open(MEDIUM);
    try {
      await page.waitForSelector('#allocator-totals', { state: 'attached', timeout: WAIT });
      const means = '1 − largest free block ÷ cached free';
      assert.ok((await page.textContent('#allocator-totals')).includes(means));
      const th = await page.$$eval('#allocator-segments-table th', (ths) => ths.find((t) => t.textContent === 'Fragmentation')?.title);
      assert.ok(th.startsWith(means), th);
      assert.ok((await page.textContent('#allocator-definitions')).includes(means));
      // Segments with the most unused memory first, as the command line lists them.
      const answers = await page.$eval('#allocator-state', (e) => Number(e.dataset.answers));
      await page.selectOption('#allocator-order', 'cached-free');
      await page.waitForFunction((n) => {
        const e = document.querySelector('#allocator-state');
        return Number(e.dataset.answers) > n && e.dataset.order === 'cached-free';
      }, answers, { timeout: WAIT });
      const rows = await page.$$eval('#allocator-segments-table tbody tr', (trs) => trs.map((t) => [t.dataset.address, Number(t.dataset.cachedFree)]));
      const device = await page.$eval('#overview', (e) => e.dataset.device);
      const listed = cli('segments', path.join(REAL_FIXTURES, MEDIUM), '--sort', 'cached-free', '--json').devices[device].segments;
      assert.ok(rows.length > 1, `${rows.length} rows`);
      assert.deepEqual(rows.map(([a]) => a), listed.slice(0, rows.length).map((s) => String(s.address)));
      assert.ok(rows.every(([, free], i) => i === 0 || rows[i - 1][1] >= free), JSON.stringify(rows));
      assert.equal(rows[0][1], Math.max(...listed.map((s) => s.totals.cached_free)));
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('names the timeline\'s annotation scope bands by their words, never "#…", at 1440 and 1024 px', { skip: skipWithout(HEALTHY_STEP) }, async () => {
    for (const [width, height] of [[1440, 900], [1024, 700]]) {
      const { context, page, errors } = await open(HEALTHY_STEP, width, height);
      try {
        await page.waitForFunction(() => JSON.parse(document.querySelector('#timeline-overlay')?.dataset.labels || '[]').some((l) => l.kind === 'scope'), null, { timeout: WAIT });
        const scopes = JSON.parse(await page.getAttribute('#timeline-overlay', 'data-labels')).filter((l) => l.kind === 'scope');
        for (const label of scopes) assert.match(label.text, /^[^#\s]/, `a band reads ${JSON.stringify(label.text)}`);
        assert.deepEqual(errors, []);
      } finally {
        await context.close();
      }
    }
  });

  it('shows the whole plot without scrolling at 1440×900, 1024×700 and in a 640 px frame, warnings folded to a line, every control of the toolbar and the legend in view', { skip: skipWithout(FOUR_DEVICES) }, async () => {
    /** Where the plot and what sits above it are, and how many rows each takes. */
    const layout = (page) => page.evaluate(() => {
      const box = (s) => document.querySelector(s)?.getBoundingClientRect();
      const rows = (s) => {
        const e = document.querySelector(s);
        // Items of a row are centred on one line: a second row has its own centre.
        const centres = [...e.children].filter((c) => c.offsetParent).map((c) => { const r = c.getBoundingClientRect(); return (r.top + r.bottom) / 2; }).sort((a, b) => a - b);
        return centres.filter((c, i) => i === 0 || c - centres[i - 1] > 12).length;
      };
      return {
        inner: innerHeight,
        plot: box('#timeline-canvas').toJSON(),
        toolbar: rows('.timeline-toolbar'),
        legend: rows('.legend-list'),
        // Every control shown whole: none behind a scroll bar or past the window's edge.
        hidden: [...document.querySelectorAll('.timeline-toolbar button, .timeline-toolbar input, .timeline-toolbar label, .legend-button')]
          .filter((e) => e.offsetParent)
          .filter((e) => {
            const r = e.getBoundingClientRect();
            let clip = { left: 0, right: innerWidth };
            for (let p = e.parentElement; p; p = p.parentElement) {
              if (getComputedStyle(p).overflowX !== 'visible') {
                const b = p.getBoundingClientRect();
                clip = { left: Math.max(clip.left, b.left), right: Math.min(clip.right, b.right) };
              }
            }
            return r.left < clip.left - 1 || r.right > clip.right + 1;
          })
          .map((e) => e.id || e.dataset.category || e.textContent.trim()),
        sideways: [...document.querySelectorAll('.timeline-toolbar, .legend-list')].filter((e) => e.scrollWidth > e.clientWidth + 1).map((e) => e.className),
        warnings: [...document.querySelectorAll('#warnings .warning')].filter((w) => w.offsetParent).map((w) => w.getBoundingClientRect().height),
      };
    });
    const plotWhole = (l, where) => {
      assert.ok(l.plot.height >= 280, `${where}: a plot ${l.plot.height} px high`);
      assert.ok(l.plot.top >= 0 && l.plot.bottom <= l.inner, `${where}: the plot spans ${l.plot.top}–${l.plot.bottom} px of ${l.inner}`);
    };
    for (const [width, height] of [[1440, 900], [1024, 700]]) {
      const { context, page, errors } = await open(FOUR_DEVICES, width, height);
      try {
        await page.waitForFunction(() => Number(document.querySelector('#timeline')?.dataset.framesPainted) > 0, null, { timeout: WAIT });
        const l = await layout(page);
        plotWhole(l, `${width}×${height}`);
        assert.deepEqual(l.hidden, [], `${width}×${height}: controls out of view`);
        assert.deepEqual(l.sideways, [], `${width}×${height}: rows that scroll sideways`);
        assert.ok(l.toolbar <= 2, `${width}×${height}: the toolbar takes ${l.toolbar} rows`);
        // The categories with nothing live are counted, not listed: one row of what is live.
        assert.equal(l.legend, 1, `${width}×${height}: the legend keeps one row`);
        assert.match(await page.textContent('#timeline-legend .legend-empty'), /^\d+ empty$/);
        if (width === 1024) {
          assert.equal(l.warnings.length, 1, 'one warning line');
          assert.ok(l.warnings[0] < 30, `the warning folds to a line (${l.warnings[0]} px)`);
          await page.click('#timeline-help-button');
          await page.waitForSelector('.timeline-help', { timeout: WAIT });
          await page.keyboard.press('Escape');
          // The whole warning is one click away, and folds back.
          await page.click('#warnings-toggle');
          assert.equal(await page.getAttribute('#warnings-toggle', 'aria-expanded'), 'true');
          const open = await page.$eval('#warnings .warning', (w) => w.getBoundingClientRect().height);
          assert.ok(open > l.warnings[0], `unfolded: ${open} px`);
          await page.click('#warnings-toggle');
          assert.equal(await page.getAttribute('#warnings-toggle', 'aria-expanded'), 'false');
        } else {
          assert.ok(!(await page.isVisible('#warnings-toggle')), 'a large screen shows every warning whole');
        }
        assert.deepEqual(errors, []);
      } finally {
        await context.close();
      }
    }
    // Embedded in a frame the README's height, as the guide's <iframe> does.
    const { context, page, errors } = await shared.open({ viewport: { width: 900, height: 640 } });
    try {
      await page.goto(`${shared.server.url}index.html?embed=1&view=timeline`);
      await page.setInputFiles('#file-input', path.join(REAL_FIXTURES, FOUR_DEVICES));
      await page.waitForFunction(() => Number(document.querySelector('#timeline')?.dataset.framesPainted) > 0, null, { timeout: 60_000 });
      const l = await layout(page);
      plotWhole(l, 'embedded at 900×640');
      assert.ok(l.toolbar <= 3, `the embedded toolbar takes ${l.toolbar} rows`);
      assert.deepEqual(l.hidden, [], 'embedded: controls out of view');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('opens on the answer: the overview strip under the file name, above the timeline, in the first screen, with the out-of-memory and the top findings', { skip: skipWithout(MULTI_DEVICE_OOM, FULL_STEP) }, async () => {
    for (const [name, width, height] of [[MULTI_DEVICE_OOM, 1440, 900], [MULTI_DEVICE_OOM, 1024, 700], [FULL_STEP, 1024, 700]]) {
      const { context, page, errors } = await open(name, width, height);
      try {
        await page.waitForFunction(() => Number(document.querySelector('#timeline')?.dataset.framesPainted) > 0, null, { timeout: WAIT });
        await page.waitForSelector('#overview-strip .glance-findings[data-count]:not([data-count=""])', { timeout: WAIT });
        const where = `${name} at ${width}×${height}`;
        const boxes = await page.evaluate(() => {
          const box = (s) => document.querySelector(s).getBoundingClientRect().toJSON();
          return { title: box('.file-title'), strip: box('#overview-strip'), timeline: box('#timeline'), plot: box('#timeline-canvas'), inner: innerHeight };
        });
        assert.ok(boxes.title.bottom <= boxes.strip.top && boxes.strip.bottom <= boxes.timeline.top, `${where}: ${JSON.stringify(boxes)}`);
        assert.ok(boxes.plot.bottom <= boxes.inner, `${where}: the plot ends at ${boxes.plot.bottom} px of ${boxes.inner}`);
        // The strip's figures are the overview's, exact, as the command line prints them.
        const device = Number(await page.getAttribute('#overview-strip', 'data-device'));
        const overview = cli('overview', '--json', path.join(REAL_FIXTURES, name)).devices[String(device)];
        const figures = await page.$$eval('#overview-strip [data-glance]', (es) => es.map((e) => [e.dataset.glance, Number(e.dataset.value)]));
        assert.deepEqual(figures.map(([k]) => k), ['peak-allocated-bytes', 'reserved-at-peak-bytes', 'efficiency-at-peak-ppm', 'peak-reserved-bytes'], where);
        for (const [key, value] of figures) assert.equal(value, overview[key], `${where}: ${key}`);
        // The top findings are the breakdown's first ones, in its words, the out-of-memory first.
        const report = cli('report', '--json', '--device', String(device), path.join(REAL_FIXTURES, name));
        const summary = Object.values(report.devices)[0].summary;
        const count = Number(await page.getAttribute('#overview-strip .glance-findings', 'data-count'));
        assert.equal(count, summary.findings.length, where);
        const named = await page.$$eval('#overview-strip .glance-finding', (es) => es.map((e) => [e.dataset.finding, e.textContent.trim()]));
        assert.equal(named.length, Math.min(3, count), where);
        if (name === MULTI_DEVICE_OOM) {
          assert.equal(named[0][0], 'out-of-memory', where);
          assert.match(named[0][1], /^Out of memory at event 421: a request of 4\.94 GiB failed$/);
        }
        if (count > 3) assert.match(await page.textContent('#overview-strip .glance-more'), new RegExp(`^${count - 3} more findings?$`));
        // A click reads the finding whole in the breakdown.
        await page.waitForSelector('#findings .finding-title', { timeout: WAIT });
        const titles = await page.$$eval('#findings .finding-title', (es) => es.map((e) => e.textContent));
        assert.deepEqual(named.map(([, t]) => t), titles.slice(0, named.length), where);
        await page.click('#overview-strip .glance-finding button');
        await page.waitForFunction(() => { const r = document.querySelector('#findings').getBoundingClientRect(); return r.top < innerHeight && r.bottom > 0; }, null, { timeout: WAIT });
        assert.deepEqual(errors, []);
      } finally {
        await context.close();
      }
    }
  });

  it('never scrolls sideways from 1024 to 1920 px, one file or six, its views, the files side by side and two compared', { skip: skipWithout(FOUR_DEVICES, FULL_STEP, MEDIUM, FORWARD_MIXED, HEALTHY_STEP, MULTI_DEVICE_OOM) }, async () => {
    const sideways = (page) => page.evaluate(() => {
      window.scrollTo(100_000, window.scrollY);
      return { scrolled: window.scrollX, wide: document.documentElement.scrollWidth, inner: document.documentElement.clientWidth };
    });
    const six = [FOUR_DEVICES, FULL_STEP, MEDIUM, FORWARD_MIXED, HEALTHY_STEP, MULTI_DEVICE_OOM];
    for (const width of [1024, 1280, 1440, 1920]) {
      for (const names of [[FULL_STEP], six]) {
        const { context, page, errors } = await open(names, width, 900);
        const where = `${names.length} file(s) at ${width} px`;
        try {
          if (names.length === 1) {
            // Every view mounted: the allocator's is the last.
            await page.waitForSelector('#allocator-state', { timeout: WAIT });
            await page.waitForSelector('#table-scroll .tr', { timeout: WAIT });
            assert.equal((await sideways(page)).scrolled, 0, `${where}: ${JSON.stringify(await sideways(page))}`);
          } else {
            await page.click('#show-files');
            await page.waitForSelector('#files-table .files-row', { timeout: WAIT });
            assert.equal((await sideways(page)).scrolled, 0, `${where}, side by side: ${JSON.stringify(await sideways(page))}`);
            await page.click('#show-compare');
            await page.waitForSelector('#compare-view', { timeout: WAIT });
            await page.waitForFunction(() => !document.querySelector('#compare-pending'), null, { timeout: WAIT });
            assert.equal((await sideways(page)).scrolled, 0, `${where}, compared: ${JSON.stringify(await sideways(page))}`);
          }
          assert.deepEqual(errors, []);
        } finally {
          await context.close();
        }
      }
    }
  });

  it('keeps the settings that tell two projects\' files apart in the list, the runs legend and the comparison', { skip: skipWithout(FULL_STEP, MEDIUM) }, async () => {
    const app = await shared.open({ viewport: { width: 1440, height: 900 } });
    const { context, page, errors } = app;
    try {
      // Two projects' files, named as their runs named them: the settings sit mid-name.
      const as = (fixture, name) => ({ name, mimeType: 'application/octet-stream', buffer: fs.readFileSync(path.join(REAL_FIXTURES, fixture)) });
      await page.setInputFiles('#file-input', [
        as(FULL_STEP, 'LINYUNLinYun__CS336-assignment2-systems__cs336_systems__results__memory_profiles__xl_ctx256_forward_bf16.pickle'),
        as(MEDIUM, 'sidsoc12__spring2024-assignment2-systems__cs336_systems__mem_snapshot_ctx512_bf16_infer.pickle'),
      ]);
      await page.waitForFunction(() => document.querySelectorAll('.file-item[data-status="ready"]').length === 2, null, { timeout: 60_000 });
      const listed = await page.$$eval('.file-item .file-name', (es) => es.map((e) => e.textContent));
      assert.match(listed[0], /ctx256/, JSON.stringify(listed));
      assert.match(listed[1], /ctx512/, JSON.stringify(listed));
      await page.click('#show-files');
      await page.waitForSelector('#files-runs-legend li', { timeout: WAIT });
      const runs = await page.$$eval('#files-runs-legend li button', (es) => es.map((e) => e.textContent));
      assert.ok(runs.some((r) => /ctx256/.test(r)) && runs.some((r) => /ctx512/.test(r)), JSON.stringify(runs));
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('keeps each device\'s picked moment: a moment picked on one device is not shown on another, and is there again on coming back', { skip: skipWithout(MULTI_DEVICE_OOM) }, async () => {
    const { context, page, errors } = await open(MULTI_DEVICE_OOM, 1440, 900);
    try {
      const shown = (device) => page.waitForFunction((d) => document.querySelector('#breakdown')?.dataset.device === d
        && document.querySelector('#timeline-legend')?.dataset.state
        && document.querySelector('#breakdown-moment')?.dataset.state, String(device), { timeout: WAIT });
      await shown(1);
      const peak = await page.$eval('#breakdown-moment', (e) => e.dataset.state);
      // Pick a moment on cuda:1 by a click on the run's stacked area.
      await clickSeries(page);
      await page.waitForSelector('#breakdown-at-picked[aria-pressed="true"]', { timeout: WAIT });
      await page.waitForFunction((s) => document.querySelector('#breakdown-moment')?.dataset.state !== s, peak, { timeout: WAIT });
      const picked = await page.$eval('#breakdown-moment', (e) => e.dataset.state);
      await page.mouse.move(0, 0);
      await page.waitForFunction((s) => document.querySelector('#timeline-legend').dataset.state === s, picked, { timeout: WAIT });

      // cuda:2 has no moment picked: its views are at its own peak.
      await page.selectOption('#device-picker', '2');
      await shown(2);
      assert.equal(await page.getAttribute('#breakdown-at-peak', 'aria-pressed'), 'true');
      const peak2 = await page.$eval('#breakdown-moment', (e) => e.dataset.state);
      assert.match(await page.textContent('#timeline-legend .legend-at'), /at the peak$/);
      assert.equal(await page.$eval('#timeline-legend', (e) => e.dataset.state), peak2);

      // Back on cuda:1, its moment is there again, in the legend and the breakdown.
      await page.selectOption('#device-picker', '1');
      await shown(1);
      await page.waitForFunction((s) => document.querySelector('#timeline-legend').dataset.state === s, picked, { timeout: WAIT });
      await page.waitForFunction((s) => document.querySelector('#breakdown-moment')?.dataset.state === s, picked, { timeout: WAIT });
      assert.equal(await page.getAttribute('#breakdown-at-picked', 'aria-pressed'), 'true');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('keeps five files on one scrolling strip at 1024×700, the file shown scrolled into it', { skip: skipWithout(FOUR_DEVICES, FULL_STEP, MEDIUM, FORWARD_MIXED, HEALTHY_STEP) }, async () => {
    const { context, page, errors } = await open([FOUR_DEVICES, FULL_STEP, MEDIUM, FORWARD_MIXED, HEALTHY_STEP], 1024, 700);
    try {
      const strip = () => page.$eval('.sidebar', (e) => ({ height: e.getBoundingClientRect().height, scroll: e.scrollWidth, width: e.clientWidth, left: e.scrollLeft, overflow: getComputedStyle(e).overflowX }));
      const first = await strip();
      assert.ok(first.height < 60, `the strip is one row (${first.height} px)`);
      assert.ok(first.scroll > first.width && first.overflow === 'auto', JSON.stringify(first));
      // Open the last file from the files table: the strip scrolls to show it, the page does not.
      await page.click('#show-files');
      await page.waitForSelector('#files-table .files-row', { timeout: WAIT });
      const last = await page.$eval('.file-item:last-child', (e) => e.dataset.fileId);
      await page.click(`#files-table .files-row[data-file-id="${last}"] .open-file`);
      await page.waitForFunction((id) => document.querySelector(`.file-item[data-file-id="${id}"]`)?.classList.contains('selected'), last, { timeout: WAIT });
      await page.waitForFunction((id) => {
        const item = document.querySelector(`.file-item[data-file-id="${id}"]`).getBoundingClientRect();
        const seen = document.querySelector('.sidebar').getBoundingClientRect();
        return item.left >= seen.left && item.right <= seen.right;
      }, last, { timeout: WAIT });
      assert.ok((await strip()).left > 0, 'the strip scrolled');
      // Names in the files table are cut in the middle, never at their end.
      const shown = await page.$$eval('#files-table .label-input', (inputs) => inputs.map((i) => i.placeholder));
      assert.ok(shown.every((n) => /\.pickle$|…/.test(n) && !n.endsWith('…')), JSON.stringify(shown));
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });
});
