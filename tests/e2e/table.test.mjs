// End-to-end tests of the allocations table on a real 24-layer model (dist/) in Debian's
// headless Chromium: its totals and rows are the command line's (the same core) under every
// scope, sort and filter tried; scrolling a virtualised table brings its last lines; grouping
// by model module folds the 24 layers into one group that opens to 24 equal calls; a selected
// row is pinned on the timeline and an allocation pinned elsewhere is selected in the table; a
// category picked in a legend filters it; the CSV download holds every row. The allocator's
// state follows the keys and the timeline, and at the end holds the final segments.
//
// Run with `./x test` (which builds dist/ and the command line first) or
// `node --test tests/e2e/table.test.mjs`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

import { openFiles, REAL_FIXTURES, ROOT, sharedBrowser, waitSettled } from './helpers.mjs';

/** A 24-layer transformer's inference (CS336 "medium"). */
const MEDIUM = 'Wedsonlin__assignment2-systems__results__medium_1024_inference_memory_snapshot.pickle';
const FILE = path.join(REAL_FIXTURES, MEDIUM);
const WAIT = 30_000;

const skip = fs.existsSync(FILE) ? false : `${MEDIUM} not found in ${REAL_FIXTURES}`;
const shared = sharedBrowser();

/** What `memsight table --json` prints for device 0 with `args`. */
function cliTable(...args) {
  const json = execFileSync('cargo', ['run', '-q', '-p', 'memsight-cli', '--', 'table', FILE, '--json', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  return JSON.parse(json).devices['0'];
}

async function open() {
  const app = await shared.open({ viewport: { width: 1500, height: 1000 } });
  await openFiles(app.page, FILE);
  assert.equal(await waitSettled(app.page), 'ready');
  await app.page.waitForSelector('#timeline[data-ready="true"]', { timeout: WAIT });
  await app.page.waitForSelector('#allocations-table[data-ready="true"]', { timeout: WAIT });
  return app;
}

/** The table's totals as its data attributes hold them. */
const totals = (page) => page.$eval('#allocations-table', (e) => ({
  count: Number(e.dataset.count),
  requested_bytes: Number(e.dataset.requestedBytes),
  size_bytes: Number(e.dataset.sizeBytes),
  lines: Number(e.dataset.lineCount),
}));

/** The rows in the DOM, in line order. */
const rows = (page) => page.$$eval('#allocations-table .tr.row', (items) => items
  .map((r) => ({
    line: Number(r.dataset.line),
    element: Number(r.dataset.element),
    size: Number(r.dataset.sizeBytes),
    requested: Number(r.dataset.requestedBytes),
    role: r.dataset.role,
    selected: r.getAttribute('aria-selected') === 'true',
  }))
  .sort((a, b) => a.line - b.line));

/** Does `act`, then waits for the table's next answer, and for the one after it when that
 * comes soon (a change of scope may also reveal the selection). */
async function changed(page, act) {
  const answers = () => page.$eval('#allocations-table', (e) => Number(e.dataset.answers));
  const before = await answers();
  await act();
  await page.waitForFunction((b) => Number(document.querySelector('#allocations-table').dataset.answers) > b, before, { timeout: WAIT });
  await page.waitForTimeout(100);
}

describe('the allocations table of a 24-layer model', { skip }, () => {
  it('sorts and filters with the command line\'s totals, and scrolls to its last line', async () => {
    const { context, page, errors } = await open();
    try {
      // At the peak, largest blocks first: the command line's rows in its order.
      const cli = cliTable();
      assert.deepEqual(await totals(page), { count: cli.totals.count, requested_bytes: cli.totals.requested_bytes, size_bytes: cli.totals.size_bytes, lines: cli.totals.count });
      const shown = await rows(page);
      assert.ok(shown.length >= 10, `${shown.length} rows shown`);
      assert.deepEqual(shown.slice(0, 10).map((r) => r.requested), cli.rows.slice(0, 10).map((r) => r.requested_bytes));
      assert.ok(shown.every((r, i) => i === 0 || shown[i - 1].size >= r.size), 'largest first');

      // Sorted by requested size, ascending (a second click reverses).
      await changed(page, () => page.click('#table-sort-requested'));
      await changed(page, () => page.click('#table-sort-requested'));
      assert.equal(await page.getAttribute('[data-column="requested"]', 'aria-sort'), 'ascending');
      const ascending = await rows(page);
      assert.deepEqual(ascending.slice(0, 10).map((r) => r.requested), cliTable('--sort', 'requested:asc').rows.slice(0, 10).map((r) => r.requested_bytes));

      // Every allocation; then frame text, a regex and a size range narrow it.
      await changed(page, () => page.click('#table-scope-all'));
      const all = cliTable('--scope', 'all');
      assert.equal((await totals(page)).count, all.totals.count);
      await changed(page, async () => {
        await page.fill('#table-filter', 'softmax');
        await page.press('#table-filter', 'Enter');
      });
      const softmax = cliTable('--scope', 'all', '--filter', 'softmax');
      assert.ok(softmax.totals.count > 0);
      assert.equal((await totals(page)).count, softmax.totals.count);
      assert.equal((await totals(page)).requested_bytes, softmax.totals.requested_bytes);
      await changed(page, async () => {
        await page.fill('#table-filter', 'nn_utils\\.py:[0-9]+:softmax');
        await page.check('#table-regex');
        await page.press('#table-filter', 'Enter');
      });
      assert.equal((await totals(page)).count, cliTable('--scope', 'all', '--filter', 'nn_utils\\.py:[0-9]+:softmax', '--regex').totals.count);
      await changed(page, async () => {
        await page.fill('#table-filter', '');
        await page.press('#table-filter', 'Enter');
      });
      await changed(page, async () => {
        await page.fill('#table-min-size', '100 MiB');
        await page.press('#table-min-size', 'Enter');
      });
      const large = cliTable('--scope', 'all', '--min-bytes', String(100 << 20));
      assert.equal((await totals(page)).count, large.totals.count);
      assert.ok((await rows(page)).every((r) => r.requested >= 100 << 20));
      await changed(page, async () => {
        await page.fill('#table-min-size', '');
        await page.press('#table-min-size', 'Enter');
      });

      // A virtualised table: only what is in view exists; scrolling to the end brings the last line.
      const everything = await totals(page);
      assert.equal(everything.count, all.totals.count);
      assert.ok((await rows(page)).length < everything.count / 4, 'only the lines around the view are in the page');
      await page.$eval('#table-scroll', (e) => { e.scrollTop = e.scrollHeight; });
      await page.waitForFunction((n) => [...document.querySelectorAll('#allocations-table .tr.row')].some((r) => Number(r.dataset.line) === n - 1), everything.lines, { timeout: WAIT });
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('lists what was made in the timeline\'s view, and follows the view once it stays still', async () => {
    const { context, page, errors } = await open();
    try {
      const view = () => page.$eval('#timeline', (e) => [Number(e.dataset.viewStart), Number(e.dataset.viewEnd), Number(e.dataset.fullStart), Number(e.dataset.fullEnd)]);
      const [x0, x1, f0, f1] = await view();
      assert.deepEqual([x0, x1], [f0, f1], 'the whole trace at first');
      await changed(page, () => page.click('#table-scope-window'));
      // The whole trace: every allocation made within it (not those from before it).
      const made = cliTable('--scope', 'all').rows.filter((r) => r.alloc_event !== null);
      assert.equal((await totals(page)).count, made.length);
      // Zoomed in: fewer, and exactly those allocated in the states it shows.
      await changed(page, async () => {
        await page.focus('#timeline-canvas');
        for (let i = 0; i < 4; i++) await page.keyboard.press('w');
      });
      await page.waitForTimeout(600);
      const [z0, z1] = await view();
      // The states the view shows: from the one at its left edge to the one its right edge ends in.
      const first = Math.floor(z0);
      const last = Math.ceil(z1) - 1;
      const expected = made.filter((r) => r.alloc_event + 1 >= first && r.alloc_event + 1 <= last).length;
      assert.ok(expected < made.length, `${expected} of ${made.length} after zooming in`);
      await page.waitForFunction((n) => Number(document.querySelector('#allocations-table').dataset.count) === n, expected, { timeout: WAIT });
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('groups by model module: the 24 layers fold into one group of 24 equal calls', async () => {
    const { context, page, errors } = await open();
    try {
      await changed(page, () => page.click('#table-scope-all'));
      await changed(page, () => page.selectOption('#table-group-by', 'module'));
      const groups = await page.$$eval('#allocations-table .tr.group[data-depth="0"]', (items) => items.map((g) => ({
        path: g.dataset.path, count: Number(g.dataset.count), bytes: Number(g.dataset.requestedBytes), occurrences: Number(g.dataset.occurrences),
      })));
      const t = await totals(page);
      assert.equal(groups.reduce((a, g) => a + g.bytes, 0), t.requested_bytes, 'groups add up to the table');
      const layers = groups.filter((g) => g.occurrences > 0);
      assert.equal(layers.length, 1);
      assert.equal(layers[0].occurrences, 24);
      const cli = cliTable('--scope', 'all', '--group-by', 'module');
      assert.ok(cli.groups.some((g) => g.occurrences === 24 && g.count === layers[0].count));

      await changed(page, () => page.click(`.tr.group[data-path="${layers[0].path}"]`));
      const calls = await page.$$eval('#allocations-table .tr.group[data-depth="1"]', (items) => items.map((g) => ({ count: Number(g.dataset.count), bytes: Number(g.dataset.requestedBytes) })));
      assert.equal(calls.length, 24);
      assert.ok(calls.every((c) => c.count === calls[0].count && c.bytes === calls[0].bytes), 'every layer is alike');
      assert.equal(calls[0].count * 24, layers[0].count);
      assert.equal(await page.getAttribute(`.tr.group[data-path="${layers[0].path}"]`, 'aria-expanded'), 'true');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('shares the selection with the timeline both ways, and a legend filters it', async () => {
    const { context, page, errors } = await open();
    try {
      // A row clicked is pinned on the timeline, and its stack shown.
      const second = (await rows(page))[1];
      await page.click(`#allocations-table .tr.row[data-element="${second.element}"]`);
      await page.waitForFunction((i) => document.querySelector('#timeline').dataset.pinned === String(i), second.element, { timeout: WAIT });
      await page.waitForSelector(`#table-detail[data-element="${second.element}"]`);
      await page.waitForSelector('#table-detail .stack', { timeout: WAIT });
      assert.ok(await page.$$eval('#table-detail .stack .frame:not(.hidden)', (f) => f.length) > 0, 'the user\'s frames are shown');

      // One of the breakdown's largest allocations, pinned on the timeline, is selected here.
      const pinned = await page.$eval('#top-allocations tbody tr:nth-child(4)', (r) => r.dataset.index);
      await page.click('#top-allocations tbody tr:nth-child(4) button');
      await page.waitForFunction((i) => document.querySelector('#timeline').dataset.pinned === i, pinned, { timeout: WAIT });
      await page.waitForSelector(`#allocations-table .tr.row[data-element="${pinned}"][aria-selected="true"]`, { timeout: WAIT });

      // A role picked in the breakdown's legend filters the table to it.
      const roles = await page.$$eval('#legend-roles [data-category]', (items) => Object.fromEntries(items.map((i) => [i.dataset.category, Number(i.dataset.value)])));
      const role = Object.entries(roles).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1])[0][0];
      await changed(page, () => page.click(`#legend-roles [data-category="${role}"] button`));
      assert.equal((await totals(page)).requested_bytes, roles[role]);
      assert.ok((await rows(page)).every((r) => r.role === role));
      assert.equal(await page.$eval('#table-role', (s) => s.value), role);
      await changed(page, () => page.click(`#legend-roles [data-category="${role}"] button`));

      // A timeline search is the table's filter over every allocation: the same matches, largest first.
      await changed(page, async () => {
        await page.fill('#timeline-search', 'softmax');
        await page.press('#timeline-search', 'Enter');
      });
      await page.waitForFunction(() => document.querySelector('#timeline').dataset.searchCount, null, { timeout: WAIT });
      await page.waitForTimeout(300);
      assert.equal(await page.$eval('#table-filter', (i) => i.value), 'softmax');
      const searched = await totals(page);
      assert.equal(String(searched.count), await page.$eval('#timeline', (e) => e.dataset.searchCount));
      const largest = Number(await page.getAttribute('#timeline-search-totals', 'data-largest'));
      assert.equal(Number(await page.$eval('#allocations-table', (e) => e.dataset.largest)), largest);
      assert.equal((await rows(page))[0].requested, largest, 'the largest match first');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('downloads the table as CSV with every row', async () => {
    const { context, page, errors } = await open();
    try {
      await changed(page, () => page.click('#table-scope-all'));
      const t = await totals(page);
      const [csv] = await Promise.all([page.waitForEvent('download'), page.click('#table-csv')]);
      assert.match(csv.suggestedFilename(), /-cuda0-table\.csv$/);
      const lines = fs.readFileSync(await csv.path(), 'utf8').trimEnd().split('\n');
      const header = lines[0].split(',');
      const requested = header.indexOf('requested_bytes');
      const size = header.indexOf('size_bytes');
      assert.ok(requested >= 0 && size >= 0, lines[0]);
      assert.equal(lines.length - 1, t.count);
      const sum = (c) => lines.slice(1).reduce((a, l) => a + Number(l.split(',')[c]), 0);
      assert.equal(sum(requested), t.requested_bytes);
      assert.equal(sum(size), t.size_bytes);
      await page.waitForSelector('#table-csv-status');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('shows the allocator\'s state at any moment, the final segments at the end', async () => {
    const { context, page, errors } = await open();
    try {
      await page.waitForSelector('#allocator-state[data-ready="true"]', { timeout: WAIT });
      const allocator = () => page.$eval('#allocator-state', (e) => ({
        state: Number(e.dataset.state), states: Number(e.dataset.states), reserved: Number(e.dataset.reserved),
        allocated: Number(e.dataset.allocated), requested: Number(e.dataset.requested), segments: Number(e.dataset.segments),
        answers: Number(e.dataset.answers),
      }));
      const next = async (act) => {
        const before = (await allocator()).answers;
        await act();
        await page.waitForFunction((b) => Number(document.querySelector('#allocator-state').dataset.answers) > b, before, { timeout: WAIT });
        return allocator();
      };
      // At the peak first: its requested bytes are the peak the timeline shows.
      const peak = await allocator();
      assert.equal(peak.state, Number(await page.$eval('#timeline', (e) => e.dataset.peakState)));
      assert.equal(peak.requested, Number(await page.$eval('#timeline', (e) => e.dataset.peakBytes)));
      assert.ok(peak.allocated >= peak.requested && peak.reserved >= peak.allocated);
      // The arrow keys move one event, Shift a hundred.
      await page.focus('#allocator-state');
      assert.equal((await next(() => page.keyboard.press('ArrowRight'))).state, peak.state + 1);
      assert.equal((await next(() => page.keyboard.press('Shift+ArrowLeft'))).state, Math.max(0, peak.state + 1 - 100));
      // At the end: the final segments, as the command line's overview counts them.
      const end = await next(() => page.keyboard.press('End'));
      assert.equal(end.state, end.states - 1);
      const overview = JSON.parse(execFileSync('cargo', ['run', '-q', '-p', 'memsight-cli', '--', 'overview', FILE, '--json'], { cwd: ROOT, encoding: 'utf8' })).devices['0'];
      assert.equal(end.segments, overview['segment-count']);
      assert.equal(end.reserved, overview['reserved-end-bytes']);
      const listed = await page.$$eval('#allocator-segments-table tbody tr', (rows) => rows.length);
      assert.equal(listed, Math.min(12, end.segments));
      // A moment picked on the timeline (Shift+click) moves it there.
      await page.locator('#timeline-canvas').scrollIntoViewIfNeeded();
      const box = await page.locator('#timeline-canvas').boundingBox();
      const picked = await next(() => page.locator('#timeline-canvas').click({ position: { x: box.width * 0.3, y: box.height * 0.9 }, modifiers: ['Shift'] }));
      assert.notEqual(picked.state, end.state);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });
});
