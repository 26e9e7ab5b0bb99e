// End-to-end tests of the memory-timeline view (dist/) in Debian's headless Chromium: the
// worker's pixels against what CPython computes from the same files
// (tests/expectations/timeline.json, written by tests/python/expect_timeline.py), hover and
// pin, stacks, search, and navigation by keys, wheel, drag and buttons.
//
// Files: the bundled example, tests/fixtures/no_time_no_frames.pickle, and two real snapshots
// read from ../shared/fixtures/real (those tests skip when the folder or a file is absent).
//
// Run with `./x test` (which builds dist/ first) or `node --test tests/e2e/timeline.test.mjs`.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import {
  EXPECTATIONS, marks, openFiles, PLAIN_SKIP, REAL_FIXTURES, ROOT, sharedBrowser, tempFile, waitSettled,
} from './helpers.mjs';

const TIMELINE_EXPECTATIONS = path.join(ROOT, 'tests/expectations/timeline.json');
const EXPECTED = JSON.parse(fs.readFileSync(TIMELINE_EXPECTATIONS, 'utf8'));
/** Allocations: hover, pin, stacks and search. */
const REAL_ALLOCATIONS = 'bcrafton__assignment2-systems__memory_snapshot.pickle';
/** Segment events throughout the trace (the reserved peak is the baseline). */
const REAL_SEGMENTS = 'kkaitlyn111__cs336-a2-systems__memory_2.7b_forward.pickle';

/** Light theme colours of the worker's pixels. */
const COLOUR = {
  background: '255,255,255',
  line: '30,30,30',
  pinned: '220,20,60',
  matched: '250,204,21',
  small: '170,176,186',
};
const WAIT = 15_000;

const app = sharedBrowser();

// ---------------------------------------------------------------------------------------------
// Page helpers

const dataset = (page, selector) => page.$eval(selector, (e) => ({ ...e.dataset }));
const timeline = (page) => dataset(page, '#timeline');
const frameOnScreen = (page) => dataset(page, '#timeline-frame');
const framesPainted = async (page) => Number((await timeline(page)).framesPainted || 0);

/** What the page shows, for failure messages. */
async function state(page) {
  return {
    timeline: await timeline(page).catch(() => null),
    frame: await frameOnScreen(page).catch(() => null),
  };
}

/**
 * Waits until no frame has been painted for `quiet` ms: a view change can ask for a second
 * frame while the first is in flight (pin and centre, search marks), and pixels are read from
 * the last one.
 */
async function settle(page, quiet = 150) {
  let last = await framesPainted(page);
  for (let i = 0; i < 40; i++) {
    await page.waitForTimeout(quiet);
    const now = await framesPainted(page);
    if (now === last) return;
    last = now;
  }
}

/**
 * Waits for a frame painted after `before` frames that shows the current view: in event
 * units its first state is floor(view start) and its last ceil(view end) - 1 (within one).
 */
async function waitFrame(page, before, what = 'a new frame') {
  try {
    await page.waitForFunction(
      (before) => {
        const t = document.querySelector('#timeline')?.dataset;
        const f = document.querySelector('#timeline-frame')?.dataset;
        if (!t || !f || t.ready !== 'true' || Number(t.framesPainted) <= before) return false;
        if (t.mode !== 'events') return true;
        const states = Number(t.states);
        const first = Math.max(0, Math.floor(Number(t.viewStart)));
        const last = Math.min(states - 1, Math.ceil(Number(t.viewEnd)) - 1);
        return Number(f.firstState) === first && Math.abs(Number(f.lastState) - last) <= 1;
      },
      before,
      { timeout: WAIT },
    );
  } catch (error) {
    assert.fail(`${what} of the view was not painted: ${JSON.stringify(await state(page))} (${error.message.split('\n')[0]})`);
  }
}

/** Runs `action` and waits for the frame of the resulting view. */
async function painted(page, action, what) {
  const before = await framesPainted(page);
  await action();
  await waitFrame(page, before, what);
}

/** Opens a file (or the example with `null`) and waits for the timeline's first frame. */
async function openTimeline(page, file) {
  if (file === null) await page.click('#open-example');
  else await openFiles(page, file);
  assert.equal(await waitSettled(page), 'ready');
  await page.waitForSelector('#timeline[data-ready="true"]', { timeout: WAIT });
  await waitFrame(page, 0, 'the first frame');
  // These tests read each allocation's own colour (categories.test.mjs tests the others).
  await painted(page, () => page.click('#timeline-colour-allocation'), 'the frame coloured by allocation');
}

async function setReservedLine(page, on) {
  if ((await page.isChecked('#timeline-reserved-line')) !== on) {
    await painted(page, () => page.click('#timeline-reserved-line'), `the frame with the reserved line ${on ? 'on' : 'off'}`);
  }
}

/** Moves focus out of text fields, so keys go to the timeline. */
const focusPlot = (page) => page.focus('#timeline-canvas');

async function resetView(page) {
  const t = await timeline(page);
  if (t.viewStart !== t.fullStart || t.viewEnd !== t.fullEnd) {
    await focusPlot(page);
    await painted(page, () => page.keyboard.press('0'), 'the whole trace');
  }
}

/**
 * The canvas' pixels, summarised in the page: per column the number of non-background pixels
 * and the highest one (y from the top), a histogram of colours, and for `colour` the columns
 * holding it with their count and first and last y.
 */
function scanCanvas(page, colour = null) {
  return page.evaluate((colour) => {
    const canvas = document.getElementById('timeline-canvas');
    const { width: W, height: H } = canvas;
    const px = canvas.getContext('2d').getImageData(0, 0, W, H).data;
    const heights = new Array(W).fill(0);
    const tops = new Array(W).fill(H);
    const colours = {};
    const columns = new Map();
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        const i = (y * W + x) * 4;
        const key = `${px[i]},${px[i + 1]},${px[i + 2]}`;
        colours[key] = (colours[key] ?? 0) + 1;
        if (key === '255,255,255') continue;
        heights[x] += 1;
        if (y < tops[x]) tops[x] = y;
        if (key === colour) {
          const c = columns.get(x) ?? { x, n: 0, y0: y, y1: y };
          c.n += 1;
          c.y1 = y;
          columns.set(x, c);
        }
      }
    }
    return { W, H, heights, tops, colours, columns: [...columns.values()] };
  }, colour);
}

/** Waits until the canvas holds `colour`; returns the scan. */
async function waitForColour(page, colour, what) {
  try {
    await page.waitForFunction(
      (colour) => {
        const canvas = document.getElementById('timeline-canvas');
        const [r, g, b] = colour.split(',').map(Number);
        const px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
        for (let i = 0; i < px.length; i += 4) {
          if (px[i] === r && px[i + 1] === g && px[i + 2] === b) return true;
        }
        return false;
      },
      colour,
      { timeout: WAIT },
    );
  } catch {
    assert.fail(`${what}: no pixel of colour ${colour} on the canvas: ${JSON.stringify(await state(page))}`);
  }
  await settle(page);
  return scanCanvas(page, colour);
}

/** Page coordinates of canvas pixel (x, y) (device pixels), at the pixel's centre. */
async function canvasPoint(page, x, y) {
  const { left, top, dpr } = await page.$eval('#timeline-canvas', (c) => {
    const r = c.getBoundingClientRect();
    return { left: r.left, top: r.top, dpr: c.width / r.width };
  });
  return { x: left + (x + 0.5) / dpr, y: top + (y + 0.5) / dpr };
}

/**
 * A pixel inside `columns` (from scanCanvas): half-way up the middle one of the columns with
 * the most pixels, away from the edges of the run.
 */
function middleOf(columns) {
  const most = Math.max(...columns.map((c) => c.n));
  const tallest = columns.filter((c) => c.n === most).sort((a, b) => a.x - b.x);
  const best = tallest[Math.floor(tallest.length / 2)];
  return { x: best.x, y: Math.floor((best.y0 + best.y1) / 2) };
}

/** Moves the pointer off the plot (clears the hover). */
const pointerAway = (page) => page.mouse.move(2, 2);

/** Hovers canvas pixel (x, y) and returns the tooltip's data once it names something. */
async function hover(page, x, y) {
  await pointerAway(page);
  await page.waitForSelector('#timeline-tooltip', { state: 'detached', timeout: WAIT });
  const p = await canvasPoint(page, x, y);
  await page.mouse.move(p.x, p.y);
  await page.waitForSelector('#timeline-tooltip', { timeout: WAIT });
  return dataset(page, '#timeline-tooltip');
}

/** Runs a search from the search box. */
async function search(page, query) {
  await page.fill('#timeline-search', query);
  await page.press('#timeline-search', 'Enter');
}

async function waitAttr(page, selector, name, value, what) {
  try {
    await page.waitForFunction(
      ([selector, name, value]) => document.querySelector(selector)?.getAttribute(name) === value,
      [selector, name, value],
      { timeout: WAIT },
    );
  } catch {
    const got = await page.$eval(selector, (e, n) => e.getAttribute(n), name).catch(() => '(no element)');
    assert.fail(`${what}: ${selector} ${name} is ${JSON.stringify(got)}, expected ${JSON.stringify(value)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// The specification's arithmetic

const num = (v) => Number(v);
const view = (t) => ({ x0: num(t.viewStart), x1: num(t.viewEnd) });
const full = (t) => ({ x0: num(t.fullStart), x1: num(t.fullEnd) });

function clampWindow(w, f) {
  const span = Math.min(w.x1 - w.x0, f.x1 - f.x0);
  const x0 = Math.min(Math.max(w.x0, f.x0), f.x1 - span);
  return { x0, x1: x0 + span };
}

/** Zoom by `factor` keeping the point at `fraction` of the width fixed (span at least 4 states). */
function zoomWindow(w, fraction, factor, f) {
  const at = w.x0 + (w.x1 - w.x0) * fraction;
  const span = Math.min(Math.max((w.x1 - w.x0) * factor, Math.min(4, f.x1 - f.x0)), f.x1 - f.x0);
  return clampWindow({ x0: at - span * fraction, x1: at - span * fraction + span }, f);
}

function panWindow(w, fraction, f) {
  const dx = (w.x1 - w.x0) * fraction;
  return clampWindow({ x0: w.x0 + dx, x1: w.x1 + dx }, f);
}

function assertWindow(got, want, f, what) {
  const tolerance = (f.x1 - f.x0) * 1e-9;
  assert.ok(
    Math.abs(got.x0 - want.x0) <= tolerance && Math.abs(got.x1 - want.x1) <= tolerance,
    `${what}: view [${got.x0}, ${got.x1}), expected [${want.x0}, ${want.x1})`,
  );
}

/** States covered by column x of `width` over the view [x0, x1) (event units). */
function columnSpan(x, x0, x1, width, states) {
  const dx = (x1 - x0) / width;
  const a = x0 + x * dx;
  const b = a + dx;
  const first = Math.min(Math.max(0, Math.floor(a)), states - 1);
  const last = Math.min(Math.max(first, Math.ceil(b) - 1), states - 1);
  return [first, last];
}

/** The allocated curve per state, in MiB rounded down, from its steps. */
function curveMiB(steps, states) {
  const values = new Float64Array(states);
  let k = 0;
  for (let s = 0; s < states; s++) {
    while (k + 1 < steps.length && steps[k + 1][0] <= s) k += 1;
    values[s] = steps[k][1];
  }
  return values;
}

/** The top edge of a frame fitted to its highest value: above it, with some headroom only. */
function assertFitted(yMax, highest) {
  assert.ok(yMax >= highest && yMax <= highest * 1.25, `y max ${yMax} is not fitted to ${highest}`);
}

/** Bottom-up pixel rows of `bytes`. */
const rowsOf = (bytes, height, yMax) => Math.floor(bytes * (height / yMax));

const MiB = 2 ** 20;

// ---------------------------------------------------------------------------------------------
// Checks shared by the files

/**
 * At the whole-trace view with the reserved line off: every column's painted height is the
 * allocated curve's maximum over its states (within a pixel), columns where the curve is a
 * pixel tall or more are painted and those where it is under a pixel are blank; the highest
 * painted pixel is the peak's and sits over the peak state.
 */
async function checkWholeTracePixels(page, expected) {
  await setReservedLine(page, false);
  await resetView(page);
  await settle(page);
  const t = await timeline(page);
  const f = await frameOnScreen(page);
  assert.equal(t.mode, 'events');
  assert.equal(num(t.states), expected.states, 'states');
  assert.equal(num(t.fullStart), 0);
  assert.equal(num(t.fullEnd), expected.states, 'events mode spans states 0..rows+1');
  assert.equal(num(t.elements), expected.elements, 'allocations in the timeline');
  assert.equal(num(t.peakBytes), expected.peak_allocated_bytes, 'data-peak-bytes');
  assert.equal(num(t.peakState), expected.peak_allocated_state, 'data-peak-state');
  assert.equal(num(f.peakBytes), expected.peak_allocated_bytes, 'the whole-trace frame peaks at the peak');
  assert.equal(num(f.firstState), 0);
  assert.equal(num(f.lastState), expected.states - 1);
  const yMax = num(f.yMax);
  assertFitted(yMax, expected.peak_allocated_bytes);

  const scan = await scanCanvas(page);
  assert.equal(scan.W, num(f.width), 'canvas width = frame width');
  assert.equal(scan.H, num(f.height), 'canvas height = frame height');
  const { W, H } = scan;
  assert.equal(scan.colours[COLOUR.line] ?? 0, 0, 'no reserved line pixel with the line off');

  const curve = curveMiB(expected.allocated_mib_steps, expected.states);
  const bad = [];
  let paintedColumns = 0;
  for (let x = 0; x < W; x++) {
    const [first, last] = columnSpan(x, 0, expected.states, W, expected.states);
    let m = 0;
    for (let s = first; s <= last; s++) m = Math.max(m, curve[s]);
    // The true maximum lies in [m, m + 1) MiB.
    const lo = rowsOf(m * MiB, H, yMax);
    const hi = rowsOf((m + 1) * MiB, H, yMax);
    const h = scan.heights[x];
    if (h > 0) paintedColumns += 1;
    if (h < lo - 1 || h > hi + 1 || (lo >= 1 && h === 0) || (hi === 0 && h !== 0)) {
      bad.push(`x ${x} states ${first}..${last}: ${h} px painted, expected ${lo}..${hi}`);
    }
  }
  assert.ok(paintedColumns > 0, 'nothing painted');
  assert.deepEqual(bad.slice(0, 10), [], `${bad.length} of ${W} columns disagree with the allocated curve`);

  // The highest painted pixel is the peak's, within a pixel, and the peak state's column has it.
  const expectedTop = H - rowsOf(expected.peak_allocated_bytes, H, yMax);
  const top = Math.min(...scan.tops);
  assert.ok(Math.abs(top - expectedTop) <= 1, `highest painted pixel at y ${top}, expected ${expectedTop}`);
  const peakColumns = [];
  for (let x = 0; x < W; x++) {
    const [first, last] = columnSpan(x, 0, expected.states, W, expected.states);
    if (first <= expected.peak_allocated_state && expected.peak_allocated_state <= last) peakColumns.push(x);
  }
  assert.ok(peakColumns.length > 0);
  const peakTop = Math.min(...peakColumns.map((x) => scan.tops[x]));
  assert.ok(
    Math.abs(peakTop - expectedTop) <= 1,
    `the column(s) ${peakColumns} of the peak state ${expected.peak_allocated_state} reach y ${peakTop}, expected ${expectedTop}`,
  );
  await setReservedLine(page, true);
}

/**
 * Searches the chosen allocation's middle address: the page pins it (match 0) and centres on
 * it; its pixels are in the pinned colour, and hovering one names it. Returns that pixel.
 */
async function searchAndHoverChosen(page, expected) {
  const chosen = expected.chosen;
  await setReservedLine(page, false);
  // Zoom in away from the allocation's start, so centring on it has to move the view.
  await resetView(page);
  await focusPlot(page);
  for (let i = 0; i < 8; i++) await painted(page, () => page.keyboard.press('w'), 'a zoomed frame');
  for (let i = 0; i < 10; i++) {
    const v = view(await timeline(page));
    if (!(v.x0 <= chosen.start_state && chosen.start_state < v.x1)) break;
    await painted(page, () => page.keyboard.press('d'), 'a panned frame');
  }
  await search(page, chosen.address_query);
  await waitAttr(page, '#timeline', 'data-search-count', String(chosen.address_matches.count), 'address search count');
  await waitAttr(page, '#timeline', 'data-pinned', String(chosen.index), 'the address search pins match 0');
  assert.match(
    await page.textContent('#timeline-search-count'),
    new RegExp(`^1 of ${chosen.address_matches.count.toLocaleString('en-US')} \\(\\d+ drawn\\)$`),
  );
  const t = await timeline(page);
  const v = view(t);
  assert.ok(
    v.x0 <= chosen.start_state && chosen.start_state < v.x1,
    `the view [${v.x0}, ${v.x1}) does not show the allocation's start ${chosen.start_state}`,
  );
  const scan = await waitForColour(page, COLOUR.pinned, 'the pinned allocation');
  const pixel = middleOf(scan.columns);
  const tip = await hover(page, pixel.x, pixel.y);
  assert.deepEqual(
    { index: tip.index, size: tip.size, addr: tip.addr },
    { index: String(chosen.index), size: String(chosen.size), addr: String(chosen.addr) },
    `the tooltip over pinned pixel (${pixel.x}, ${pixel.y})`,
  );
  assert.match(tip.hitMs, /^\d+(\.\d+)?(e-?\d+)?$/);
  await pointerAway(page);
  return pixel;
}

const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A frame (`[name, "file:line"]`) of the user's own Python: not an installed library's. */
function isUserFrame([, file]) {
  const path = file.replace(/:-?\d+$/, '');
  return path.endsWith('.py') && !/\/torch\/|site-packages\/|dist-packages\/|\/lib\/python/.test(path);
}

/** Unpins with Escape, clicks `pixel` and checks the pinned panel and its stack. */
async function clickAndCheckStack(page, expected, pixel) {
  const chosen = expected.chosen;
  await focusPlot(page);
  await page.keyboard.press('Escape');
  await waitAttr(page, '#timeline', 'data-pinned', '', 'Escape unpins');
  await page.waitForSelector('#pinned', { state: 'detached', timeout: WAIT });
  // Nothing pinned: the frame after Escape has no pinned pixel, but the same geometry.
  await page.waitForFunction(() => {
    const canvas = document.getElementById('timeline-canvas');
    const px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    for (let i = 0; i < px.length; i += 4) if (px[i] === 220 && px[i + 1] === 20 && px[i + 2] === 60) return false;
    return true;
  }, null, { timeout: WAIT });

  const p = await canvasPoint(page, pixel.x, pixel.y);
  await page.mouse.click(p.x, p.y);
  await waitAttr(page, '#timeline', 'data-pinned', String(chosen.index), 'a click pins what is under it');
  await page.waitForSelector('#pinned', { timeout: WAIT });
  const panel = await dataset(page, '#pinned');
  assert.deepEqual(
    { index: panel.index, addr: panel.addr, size: panel.size },
    { index: String(chosen.index), addr: String(chosen.addr), size: String(chosen.size) },
  );
  if (chosen.frames.length === 0) {
    assert.ok(await page.isVisible('#no-stack'), 'an allocation without a stack says so');
    assert.equal(await page.locator('#stack li.frame').count(), 0);
    return;
  }
  const readStack = () => page.$$eval('#stack li.frame', (items) => items.map((li) => ({
    name: li.querySelector('.frame-name').textContent,
    file: li.querySelector('.frame-file').textContent,
    noise: li.dataset.noise,
    hidden: li.classList.contains('hidden'),
    visible: li.checkVisibility(),
  })));
  let stack = await readStack();
  assert.deepEqual(stack.map((f) => [f.name, f.file]), chosen.frames, 'the stack, innermost first');
  const hiddenSet = new Set(chosen.hidden_frames);
  assert.deepEqual(
    stack.map((f, i) => [i, f.noise]),
    stack.map((_, i) => [i, String(hiddenSet.has(i))]),
    'frames marked as noise (memory_viz frameFilter)',
  );
  // By default the user's code comes first: every frame of it is shown, framework runs are
  // folded and noise is hidden; with no user frame, the one frame naming the allocation shows.
  const userFrames = chosen.frames.map((f, i) => [i, f]).filter(([, f]) => isUserFrame(f)).map(([i]) => i);
  const visible = stack.map((f, i) => [i, f]).filter(([, f]) => f.visible).map(([i]) => i);
  assert.ok(visible.length > 0 && visible.length < chosen.frames.length, 'the chosen stack has shown and folded frames');
  assert.ok(visible.every((i) => !hiddenSet.has(i)), 'noise is never shown by default');
  if (userFrames.length > 0) {
    assert.deepEqual(visible, userFrames, 'visible by default: the user\'s code');
    assert.equal(visible[0], userFrames[0], 'the first visible frame is the innermost user frame');
    assert.equal(await page.getAttribute('#pinned-made-by', 'data-user'), 'true');
    assert.match(await page.textContent('#pinned-made-by code'), new RegExp(`:${escapeRegExp(chosen.frames[userFrames[0]][0])}$`));
  } else {
    assert.equal(visible.length, 1, 'without user code, the frame naming the allocation');
  }
  const folds = await page.$$eval('#stack li.fold', (items) => items.map((li) => li.textContent));
  assert.ok(folds.length > 0 && folds.every((t) => /^▸ \d+ framework frames?$/.test(t)), `folds: ${folds}`);
  // Opening the first fold shows its frames.
  await page.click('#stack li.fold .fold-button');
  await page.waitForFunction((n) => [...document.querySelectorAll('#stack li.frame')].filter((li) => li.checkVisibility()).length > n, visible.length, { timeout: WAIT });
  await page.click('#stack li.fold .fold-button');
  await page.check('#show-all-frames');
  await page.waitForFunction(() => [...document.querySelectorAll('#stack li.frame')].every((li) => li.checkVisibility()), null, { timeout: WAIT });
  stack = await readStack();
  assert.deepEqual(stack.filter((f) => f.visible).map((f) => [f.name, f.file]), chosen.frames, 'all frames with "show all frames"');
  await page.uncheck('#show-all-frames');
  await page.waitForFunction(() => document.querySelectorAll('#stack li.frame.hidden').length > 0, null, { timeout: WAIT });

  await focusPlot(page);
  await page.keyboard.press('Escape');
  await waitAttr(page, '#timeline', 'data-pinned', '', 'Escape unpins');
}

/**
 * Searches the most reused address (Enter = next match, Shift+Enter = previous, wrapping),
 * then the frame text; Escape clears the search and the pin.
 */
async function checkSearches(page, expected) {
  const reused = expected.address_search;
  await resetView(page);
  await search(page, reused.query);
  await waitAttr(page, '#timeline', 'data-search-count', String(reused.count), `address search ${reused.query}`);
  await waitAttr(page, '#timeline', 'data-pinned', String(reused.first[0]), 'match 0 is pinned');
  if (reused.count >= 2) {
    await page.press('#timeline-search', 'Enter');
    await waitAttr(page, '#timeline', 'data-pinned', String(reused.first[1]), 'Enter: next match');
    assert.match(await page.textContent('#timeline-search-count'), /^2 of /);
    await page.press('#timeline-search', 'Shift+Enter');
    await waitAttr(page, '#timeline', 'data-pinned', String(reused.first[0]), 'Shift+Enter: previous match');
    await page.press('#timeline-search', 'Shift+Enter');
    await waitAttr(page, '#timeline', 'data-pinned', String(reused.last.at(-1)), 'Shift+Enter wraps to the last match');
    assert.match(await page.textContent('#timeline-search-count'), new RegExp(`^${reused.count.toLocaleString('en-US')} of `));
    await page.click('#timeline-search-next');
    await waitAttr(page, '#timeline', 'data-pinned', String(reused.first[0]), 'the next button wraps to the first match');
    await page.click('#timeline-search-prev');
    await waitAttr(page, '#timeline', 'data-pinned', String(reused.last.at(-1)), 'the previous button');
  }

  const text = expected.text_matches;
  await search(page, expected.text_query);
  await waitAttr(page, '#timeline', 'data-search-count', String(text.count), `frame text search ${expected.text_query}`);
  await waitAttr(page, '#timeline', 'data-pinned', String(text.first[0]), 'match 0 of the text search is pinned');
  const countText = await page.textContent('#timeline-search-count');
  const m = countText.match(/^1 of ([\d,]+) \(([\d,]+) drawn\)$/);
  assert.ok(m, `search count text: ${countText}`);
  assert.equal(Number(m[1].replaceAll(',', '')), text.count);
  // Walked largest first, with what the matches hold at the peak.
  assert.equal(Number(await page.getAttribute('#timeline-search-totals', 'data-bytes-at-peak')), text.bytes_at_peak);
  assert.equal(Number(await page.getAttribute('#timeline-search-totals', 'data-largest')), text.largest);
  if (text.tall_after_first > 0) {
    // The other matches are marked at the whole-trace view.
    await focusPlot(page);
    await painted(page, () => page.keyboard.press('0'), 'the whole trace with the matches');
    await waitForColour(page, COLOUR.matched, 'search matches');
  }

  // Escape in the search box clears the search, its marks and the pin. (That data-search-count
  // becomes empty again is checked by its own test below.)
  await page.focus('#timeline-search');
  await painted(page, () => page.keyboard.press('Escape'), 'the frame after clearing the search');
  await waitAttr(page, '#timeline', 'data-pinned', '', 'Escape clears the pin');
  assert.equal(await page.inputValue('#timeline-search'), '');
  assert.equal((await page.textContent('#timeline-search-count')).trim(), '');
  assert.equal(await page.isDisabled('#timeline-search-next'), true);
  assert.equal(await page.isDisabled('#timeline-search-prev'), true);
  await page.waitForFunction(() => {
    const canvas = document.getElementById('timeline-canvas');
    const px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    for (let i = 0; i < px.length; i += 4) {
      if ((px[i] === 250 && px[i + 1] === 204 && px[i + 2] === 21) || (px[i] === 220 && px[i + 1] === 20 && px[i + 2] === 60)) return false;
    }
    return true;
  }, null, { timeout: WAIT });
}

/** The segments tab: its peak is the reserved peak, and the highest pixel is that peak's. */
async function checkSegments(page, expected) {
  await painted(page, () => page.click('#timeline-tab-segments'), 'the segments timeline');
  await waitAttr(page, '#timeline', 'data-kind', 'segments', 'the segments tab');
  const t = await timeline(page);
  assert.equal(num(t.peakBytes), expected.peak_reserved_bytes, 'segments peak = reserved peak');
  assert.equal(num(t.peakState), expected.peak_reserved_state, 'segments peak state');
  assert.equal(num(t.viewStart), 0);
  assert.equal(num(t.viewEnd), expected.states);
  await settle(page);
  const f = await frameOnScreen(page);
  assert.equal(num(f.peakBytes), expected.peak_reserved_bytes);
  const yMax = num(f.yMax);
  assertFitted(yMax, expected.peak_reserved_bytes);
  const scan = await scanCanvas(page);
  const expectedTop = scan.H - rowsOf(expected.peak_reserved_bytes, scan.H, yMax);
  const top = Math.min(...scan.tops);
  assert.ok(Math.abs(top - expectedTop) <= 1, `highest segment pixel at y ${top}, expected ${expectedTop}`);
  assert.ok(scan.heights.every((h) => h > 0) || expected.peak_reserved_bytes === 0, 'reserved memory is painted in every column');
  assert.equal(await page.isHidden('#timeline-reserved-line'), true, 'no reserved line on the segments timeline');
  await painted(page, () => page.click('#timeline-tab-allocations'), 'the allocations timeline again');
  await waitAttr(page, '#timeline', 'data-kind', 'allocations', 'the allocations tab');
  assert.equal(num((await timeline(page)).peakBytes), expected.peak_allocated_bytes);
}

// ---------------------------------------------------------------------------------------------

describe('timeline of the bundled example', () => {
  const expected = EXPECTED['example.pickle'];
  let context;
  let page;
  let errors;

  before(async () => {
    ({ context, page, errors } = await app.open());
    await openTimeline(page, null);
  });
  after(async () => {
    await context?.close();
  });

  it('lays out the default device and marks its first frame', async () => {
    const t = await timeline(page);
    assert.equal(t.device, String(expected.device));
    assert.equal(t.kind, 'allocations');
    assert.equal(t.mode, 'events');
    assert.equal(t.pinned, '');
    assert.equal(t.searchCount, '');
    assert.ok(num(t.detail) > 0 && num(t.detail) <= expected.elements);
    const [decoded] = await marks(page, 'memsight:decoded');
    await page.waitForFunction(() => performance.getEntriesByName('memsight:timeline-painted').length > 0);
    const [first] = await marks(page, 'memsight:timeline-painted');
    assert.ok(decoded <= first, `timeline painted (${first}) before decoded (${decoded})`);
    const f = await frameOnScreen(page);
    assert.match(await page.textContent('#timeline-drawn'), new RegExp(`^${num(f.drawn).toLocaleString('en-US')} of ${expected.elements.toLocaleString('en-US')} allocations a pixel tall or more$`));
    // CPython's two computations of the peak agree.
    const example = JSON.parse(fs.readFileSync(path.join(ROOT, 'tests/expectations/example.json'), 'utf8')).devices[expected.device];
    assert.equal(expected.peak_allocated_bytes, example.peak_allocated_bytes);
    assert.equal(expected.peak_allocated_state, example.peak_allocated_index + 1);
    assert.equal(expected.peak_reserved_bytes, example.peak_reserved_bytes);
    assert.deepEqual(errors, []);
  });

  it('paints the allocated curve, and its highest pixel is the peak', async () => {
    await checkWholeTracePixels(page, expected);
  });

  it('W/S zoom, A/D pan and 0 resets around the centre, each followed by a new frame', async () => {
    await resetView(page);
    const f = full(await timeline(page));
    let want = { ...f };
    const steps = [
      ['w', (w) => zoomWindow(w, 0.5, 0.8, f)],
      ['w', (w) => zoomWindow(w, 0.5, 0.8, f)],
      ['d', (w) => panWindow(w, 0.1, f)],
      ['a', (w) => panWindow(w, -0.1, f)],
      ['s', (w) => zoomWindow(w, 0.5, 1.25, f)],
      ['d', (w) => panWindow(w, 0.1, f)],
      ['d', (w) => panWindow(w, 0.1, f)], // stops at the end of the trace
      ['a', (w) => panWindow(w, -0.1, f)],
      ['0', () => ({ ...f })],
    ];
    await focusPlot(page);
    for (const [key, next] of steps) {
      want = next(want);
      await painted(page, () => page.keyboard.press(key), `the frame after "${key}"`);
      assertWindow(view(await timeline(page)), want, f, `after "${key}"`);
    }
    assert.equal((await timeline(page)).viewEnd, (await timeline(page)).fullEnd);
  });

  it('the wheel zooms around the cursor and a drag pans, each followed by a new frame', async () => {
    await resetView(page);
    const f = full(await timeline(page));
    const { width, dpr } = await page.$eval('#timeline-canvas', (c) => ({ width: c.getBoundingClientRect().width, dpr: c.width / c.getBoundingClientRect().width }));
    const at = Math.round(width * 0.3);
    const p = await canvasPoint(page, at * dpr, 100);
    const fraction = (p.x - (await page.$eval('#timeline-canvas', (c) => c.getBoundingClientRect().left))) / width;
    await page.mouse.move(p.x, p.y);
    for (const delta of [-300, -300, 200]) {
      const before = view(await timeline(page));
      await painted(page, () => page.mouse.wheel(0, delta), `the frame after a wheel of ${delta}`);
      const after = view(await timeline(page));
      const spanBefore = before.x1 - before.x0;
      const spanAfter = after.x1 - after.x0;
      if (delta < 0) assert.ok(spanAfter < spanBefore * 0.95, `wheel up zooms in: ${spanBefore} -> ${spanAfter}`);
      else assert.ok(spanAfter > spanBefore * 1.05, `wheel down zooms out: ${spanBefore} -> ${spanAfter}`);
      // The x under the cursor stays put (within a CSS pixel).
      const xBefore = before.x0 + fraction * spanBefore;
      const xAfter = after.x0 + fraction * spanAfter;
      assert.ok(Math.abs(xAfter - xBefore) <= spanBefore / width, `the point under the cursor moved from ${xBefore} to ${xAfter}`);
    }

    // Drag 120 CSS pixels to the left: the view moves right by that share of its span.
    const before = view(await timeline(page));
    const start = await canvasPoint(page, 500 * dpr, 200);
    await painted(page, async () => {
      await page.mouse.move(start.x, start.y);
      await page.mouse.down();
      await page.mouse.move(start.x - 60, start.y, { steps: 3 });
      await page.mouse.move(start.x - 120, start.y, { steps: 3 });
      await page.mouse.up();
    }, 'the frame after a drag');
    const shift = (120 / width) * (before.x1 - before.x0);
    assertWindow(view(await timeline(page)), clampWindow({ x0: before.x0 + shift, x1: before.x1 + shift }, f), f, 'after dragging left');
    assert.equal((await timeline(page)).pinned, '', 'a drag does not pin');
    await pointerAway(page);
    await resetView(page);
  });

  it('the minimap moves the view: a click centres it, dragging the window pans, dragging an edge resizes', async () => {
    await resetView(page);
    const f = full(await timeline(page));
    // Zoom to a tenth of the trace at the centre so the minimap window can move.
    await focusPlot(page);
    for (let i = 0; i < 10; i++) await painted(page, () => page.keyboard.press('w'), 'the frame after w');
    // The strip's inner box (inside its border), which spans the whole trace.
    const strip = await page.$eval('#timeline-minimap', (e) => {
      const r = e.getBoundingClientRect();
      return { left: r.left + e.clientLeft, top: r.top, width: e.clientWidth, height: r.height };
    });
    const at = (x) => f.x0 + ((x - strip.left) / strip.width) * (f.x1 - f.x0);
    const y = strip.top + strip.height / 2;

    // A click outside the window centres the window there, keeping its span.
    let before = view(await timeline(page));
    let span = before.x1 - before.x0;
    // Whole pixels: pointer events report whole client coordinates, and the strip may start
    // at a fractional one.
    const clickX = Math.round(strip.left + strip.width * 0.15);
    await painted(page, async () => {
      await page.mouse.move(clickX, y);
      await page.mouse.down();
      await page.mouse.up();
    }, 'the frame after a minimap click');
    const centre = at(clickX);
    assertWindow(view(await timeline(page)), clampWindow({ x0: centre - span / 2, x1: centre + span / 2 }, f), f, 'after a minimap click');

    // Dragging the window's middle 100 px to the right pans by that share of the trace.
    before = view(await timeline(page));
    const box = await page.$eval('#timeline-minimap-window', (e) => e.getBoundingClientRect().toJSON());
    const mid = Math.round(box.left + box.width / 2);
    await painted(page, async () => {
      await page.mouse.move(mid, y);
      await page.mouse.down();
      await page.mouse.move(mid + 50, y, { steps: 3 });
      await page.mouse.move(mid + 100, y, { steps: 3 });
      await page.mouse.up();
    }, 'the frame after dragging the minimap window');
    const shift = at(mid + 100) - at(mid);
    assertWindow(view(await timeline(page)), clampWindow({ x0: before.x0 + shift, x1: before.x1 + shift }, f), f, 'after dragging the window');

    // Dragging the right edge 80 px further right widens the view; its left edge stays.
    before = view(await timeline(page));
    const edge = Math.round(await page.$eval('#timeline-minimap-window', (e) => e.getBoundingClientRect().right));
    await painted(page, async () => {
      await page.mouse.move(edge, y);
      await page.mouse.down();
      await page.mouse.move(edge + 80, y, { steps: 4 });
      await page.mouse.up();
    }, 'the frame after dragging the minimap edge');
    const resized = view(await timeline(page));
    assert.ok(Math.abs(resized.x0 - before.x0) <= (f.x1 - f.x0) / strip.width, `the left edge moved: ${before.x0} -> ${resized.x0}`);
    assertWindow(resized, clampWindow({ x0: before.x0, x1: at(edge + 80) }, f), f, 'after dragging the right edge');
    await resetView(page);
  });

  it('jump to peak shows a fiftieth of the trace around the peak', async () => {
    await resetView(page);
    const f = full(await timeline(page));
    await painted(page, () => page.click('#timeline-peak'), 'the frame at the peak');
    const v = view(await timeline(page));
    const span = (f.x1 - f.x0) / 50;
    const peak = expected.peak_allocated_state;
    assertWindow(v, clampWindow({ x0: peak - span / 2, x1: peak + span / 2 }, f), f, 'jump to peak');
    assert.ok(v.x0 <= peak && peak < v.x1, `the peak state ${peak} is outside [${v.x0}, ${v.x1})`);
    assert.equal(num((await frameOnScreen(page)).peakBytes), expected.peak_allocated_bytes, 'the frame at the peak shows the peak');
    await painted(page, () => page.click('#timeline-reset'), 'the frame after Reset');
    assertWindow(view(await timeline(page)), f, f, 'Reset');
  });

  it('the time axis shows the trace in microseconds, then events again', async () => {
    assert.ok(expected.time_range, 'the example has times');
    await resetView(page);
    assert.equal(await page.isDisabled('#timeline-axis-time'), false);
    await painted(page, () => page.click('#timeline-axis-time'), 'the time-axis frame');
    await waitAttr(page, '#timeline', 'data-mode', 'time', 'the time axis');
    const t = await timeline(page);
    assert.deepEqual([num(t.fullStart), num(t.fullEnd)], expected.time_range, 'the full range in µs');
    assert.deepEqual([num(t.viewStart), num(t.viewEnd)], expected.time_range, 'the view is reset to the whole trace');
    const f = await frameOnScreen(page);
    assert.equal(num(f.firstState), 0);
    assert.equal(num(f.lastState), expected.states - 1);
    assert.equal(num(f.peakBytes), expected.peak_allocated_bytes);
    // Zooming works in microseconds too.
    await focusPlot(page);
    await painted(page, () => page.keyboard.press('w'), 'a zoomed time-axis frame');
    const fr = { x0: expected.time_range[0], x1: expected.time_range[1] };
    assertWindow(view(await timeline(page)), zoomWindow(fr, 0.5, 0.8, fr), fr, 'zoom in time units');
    await painted(page, () => page.click('#timeline-axis-events'), 'the events-axis frame');
    await waitAttr(page, '#timeline', 'data-mode', 'events', 'the events axis');
    const back = await timeline(page);
    assert.deepEqual([num(back.fullStart), num(back.fullEnd), num(back.viewStart), num(back.viewEnd)], [0, expected.states, 0, expected.states]);
  });

  it('hovering the searched allocation names its size and address; a click pins it with its stack', async () => {
    const pixel = await searchAndHoverChosen(page, expected);
    await clickAndCheckStack(page, expected, pixel);
  });

  it('searches by address and frame text find the expected matches; Escape clears', async () => {
    await checkSearches(page, expected);
    // Ctrl+F goes to the search box.
    await focusPlot(page);
    await page.keyboard.press('Control+f');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'timeline-search');
    await focusPlot(page);
  });

  it('Escape in the search box leaves no search behind', async () => {
    await resetView(page);
    await search(page, expected.text_query);
    await waitAttr(page, '#timeline', 'data-search-count', String(expected.text_matches.count), 'the search');
    await page.press('#timeline-search', 'Escape');
    await page.waitForTimeout(300); // the worker answers the clearing request
    try {
      assert.equal((await timeline(page)).searchCount, '', 'after Escape, as before any search');
    } finally {
      await focusPlot(page);
      await page.keyboard.press('Escape');
    }
  });

  it('Escape right after a search\'s count arrives leaves nothing pinned', async () => {
    await resetView(page);
    // Press Escape in the search box as soon as the count is shown, before match 0 arrives.
    await page.evaluate(() => {
      const t = document.querySelector('#timeline');
      new MutationObserver((records, observer) => {
        if (t.dataset.searchCount && t.dataset.searchCount !== '0') {
          observer.disconnect();
          document.querySelector('#timeline-search')
            .dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
        }
      }).observe(t, { attributes: true, attributeFilter: ['data-search-count'] });
    });
    await search(page, expected.text_query);
    await page.waitForTimeout(500);
    try {
      assert.equal(await page.inputValue('#timeline-search'), '', 'Escape was pressed');
      assert.equal((await timeline(page)).pinned, '', 'nothing is pinned after Escape');
    } finally {
      await focusPlot(page);
      await page.keyboard.press('Escape');
      await waitAttr(page, '#timeline', 'data-pinned', '', 'unpinned');
    }
  });

  it('the segments tab peaks at the reserved peak', async () => {
    await checkSegments(page, expected);
  });

  it('detail 0 draws every allocation in the small band, and hovering it tells its bytes', async () => {
    await setReservedLine(page, false);
    await resetView(page);
    await painted(page, () => page.$eval('#timeline-detail', (input) => {
      input.value = '0';
      input.dispatchEvent(new Event('change', { bubbles: true }));
    }), 'the frame at detail 0');
    await waitAttr(page, '#timeline', 'data-detail', '0', 'detail 0');
    await settle(page);
    assert.equal((await frameOnScreen(page)).drawn, '0');
    assert.equal(await page.textContent('#timeline-drawn'), `0 of ${expected.elements.toLocaleString('en-US')} allocations a pixel tall or more`);
    assert.equal(await page.textContent('#timeline-detail-count'), '0');
    const scan = await scanCanvas(page);
    const colours = Object.keys(scan.colours).filter((c) => c !== COLOUR.background);
    assert.deepEqual(colours, [COLOUR.small], 'only the small band is painted');
    // The column of the peak state, near the bottom: the band holds the peak's bytes.
    const x = Math.floor((expected.peak_allocated_state + 0.5) / expected.states * scan.W);
    const [first, last] = columnSpan(x, 0, expected.states, scan.W, expected.states);
    assert.ok(first <= expected.peak_allocated_state && expected.peak_allocated_state <= last);
    const tip = await hover(page, x, scan.H - 2);
    assert.equal(tip.small, String(expected.peak_allocated_bytes), 'the band at the peak holds the peak');
    assert.equal(tip.index, undefined);
    await pointerAway(page);
    assert.deepEqual(errors, []);
  });
});

describe('timeline at devicePixelRatio 2', () => {
  const expected = EXPECTED['example.pickle'];
  let context;
  let page;

  before(async () => {
    ({ context, page } = await app.open({ deviceScaleFactor: 2 }));
    await openTimeline(page, null);
  });
  after(async () => {
    await context?.close();
  });

  it('the canvas has device pixels and hovering a pinned pixel names the allocation', async () => {
    const f = await frameOnScreen(page);
    const css = await page.$eval('#timeline-canvas', (c) => c.getBoundingClientRect().toJSON());
    assert.equal(num(f.width), Math.round(css.width * 2));
    assert.equal(num(f.height), Math.round(css.height * 2));
    await searchAndHoverChosen(page, expected);
  });

  it('hovering any pinned pixel names the pinned allocation', async () => {
    const chosen = expected.chosen;
    if ((await timeline(page)).pinned !== String(chosen.index)) {
      await search(page, chosen.address_query);
      await waitAttr(page, '#timeline', 'data-pinned', String(chosen.index), 'the address search pins match 0');
    }
    const scan = await waitForColour(page, COLOUR.pinned, 'the pinned allocation');
    // Pinned pixels at the edges of the run that an integer CSS pixel cannot address: in an odd
    // column whose left neighbour is not pinned, or in an odd top row. Only those the pointer
    // can reach (not under the plot's rounded corners).
    const pinned = new Map(scan.columns.map((c) => [c.x, c]));
    const mid = middleOf(scan.columns);
    const candidates = [
      ...scan.columns.filter((c) => c.x % 2 === 1 && !pinned.has(c.x - 1)).map((c) => ({ x: c.x, y: Math.floor((c.y0 + c.y1) / 2) })),
      ...(pinned.get(mid.x).y0 % 2 === 1 ? [{ x: mid.x, y: pinned.get(mid.x).y0 }] : []),
    ];
    const reachable = [];
    for (const p of candidates) {
      const at = await canvasPoint(page, p.x, p.y);
      if (await page.evaluate(({ x, y }) => document.elementFromPoint(x, y)?.id === 'timeline-canvas', at)) reachable.push(p);
    }
    assert.ok(reachable.length > 0, 'no pinned pixel at an odd edge to try');
    const wrong = [];
    for (const p of reachable.slice(0, 4)) {
      const tip = await hover(page, p.x, p.y);
      if (tip.index !== String(chosen.index)) wrong.push(`(${p.x}, ${p.y}): ${JSON.stringify(tip)}`);
    }
    await pointerAway(page);
    assert.deepEqual(wrong, [], 'pinned pixels whose hover names something else');
  });
});

describe('timeline of a file without times or stacks', () => {
  const expected = EXPECTED['no_time_no_frames.pickle'];
  let context;
  let page;
  let errors;

  before(async () => {
    ({ context, page, errors } = await app.open());
    await openTimeline(page, path.join(ROOT, expected.source));
  });
  after(async () => {
    await context?.close();
  });

  it('offers no time axis and paints the allocated curve up to the peak', async () => {
    assert.equal(await page.isDisabled('#timeline-axis-time'), true, 'no time axis without times');
    await checkWholeTracePixels(page, expected);
  });

  it('hovering an allocation names its requested size; pinned, it says it has no stack', async () => {
    assert.notEqual(expected.chosen.size % 512, 0, 'a size the allocator rounds (requested != block size)');
    const pixel = await searchAndHoverChosen(page, expected);
    await clickAndCheckStack(page, expected, pixel);
    assert.deepEqual(errors, []);
  });
});

/** Skip reason for a real snapshot, or false. */
function realSkip(name) {
  if (!fs.existsSync(REAL_FIXTURES)) return `real fixtures not found at ${REAL_FIXTURES}`;
  if (!fs.existsSync(path.join(REAL_FIXTURES, name))) return `${name} not found in ${REAL_FIXTURES}`;
  if (!EXPECTED[name]) return `${name} has no expectations: run tests/python/expect_timeline.py`;
  return false;
}

describe('timeline of a real snapshot (allocations)', () => {
  const name = REAL_ALLOCATIONS;
  const skip = realSkip(name);
  const expected = EXPECTED[name];
  let context;
  let page;
  let errors;

  before(async () => {
    if (skip) return;
    ({ context, page, errors } = await app.open());
    await openTimeline(page, path.join(REAL_FIXTURES, name));
  });
  after(async () => {
    await context?.close();
  });

  it('its peak is the overview\'s, and the canvas paints the allocated curve up to the peak', { skip }, async () => {
    if (fs.existsSync(EXPECTATIONS)) {
      const real = JSON.parse(fs.readFileSync(EXPECTATIONS, 'utf8'))[name]?.devices?.[expected.device];
      if (real) {
        assert.equal(expected.peak_allocated_bytes, real.peak_allocated_bytes, 'real.json agrees');
        assert.equal(expected.peak_allocated_state, real.peak_allocated_index + 1, 'real.json agrees');
      }
    }
    await checkWholeTracePixels(page, expected);
  });

  it('hovering the searched allocation names its size and address; a click pins it with its stack', { skip }, async () => {
    const pixel = await searchAndHoverChosen(page, expected);
    await clickAndCheckStack(page, expected, pixel);
  });

  it('searches by address and frame text find the expected matches; Escape clears', { skip }, async () => {
    await checkSearches(page, expected);
  });

  it('jump to peak puts the peak state in view', { skip }, async () => {
    await resetView(page);
    await painted(page, () => page.click('#timeline-peak'), 'the frame at the peak');
    const v = view(await timeline(page));
    assert.ok(v.x0 <= expected.peak_allocated_state && expected.peak_allocated_state < v.x1);
    assert.ok(Math.abs(v.x1 - v.x0 - expected.states / 50) < 1e-6);
    assert.equal(num((await frameOnScreen(page)).peakBytes), expected.peak_allocated_bytes);
    assert.deepEqual(errors, []);
  });
});

describe('timeline of a real snapshot (segments)', () => {
  const name = REAL_SEGMENTS;
  const skip = realSkip(name);

  it('the segments tab lays out and peaks at the reserved peak; the allocations peak is the overview\'s', { skip }, async () => {
    const expected = EXPECTED[name];
    const { context, page, errors } = await app.open();
    try {
      await openTimeline(page, path.join(REAL_FIXTURES, name));
      const real = fs.existsSync(EXPECTATIONS) ? JSON.parse(fs.readFileSync(EXPECTATIONS, 'utf8'))[name]?.devices?.[expected.device] : null;
      if (real) assert.equal(num((await timeline(page)).peakBytes), real.peak_allocated_bytes);
      assert.equal(num((await timeline(page)).peakBytes), expected.peak_allocated_bytes);
      await checkSegments(page, expected);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });
});

/** Waits until the rehearsal of a first load (src/ui/rehearsal.rs) has ended. */
async function rehearsalEnded(page) {
  await page.waitForFunction(() => !document.querySelector('.rehearsal'), null, { timeout: WAIT });
}

/** The canvas's pixels, summed per channel and position: equal for equal pictures. */
const canvasDigest = (page) => page.$eval('#timeline-canvas', (canvas) => {
  const px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  let digest = 0;
  for (let i = 0; i < px.length; i++) digest = (digest * 31 + px[i]) % 2147483647;
  return `${canvas.width}x${canvas.height}:${digest}`;
});

const FRAME_VALUES = ['width', 'height', 'yMin', 'yMax', 'firstState', 'lastState', 'peakBytes', 'drawn'];

describe('the first timeline frame, painted with the file', PLAIN_SKIP, () => {
  // Once the page has laid a plot out (its rehearsal of a first load does), it sends the plot's
  // size with the file and the worker paints the first frame before it reports the file
  // loaded: no layout or frame is asked for.
  it('comes with the file at the plot\'s size, and is the frame the page would have asked for', async () => {
    const expected = EXPECTED['example.pickle'];
    const { context, page, errors } = await app.open();
    try {
      await rehearsalEnded(page);
      await page.click('#open-example');
      assert.equal(await waitSettled(page), 'ready');
      await page.waitForSelector('#timeline[data-ready="true"]', { timeout: WAIT });
      await page.waitForFunction(() => performance.getEntriesByName('memsight:timeline-painted').length > 0);
      await settle(page);
      const t = await timeline(page);
      assert.equal(t.firstFrame, 'with-file');
      assert.equal(t.framesPainted, '1', 'no other frame was asked for');
      assert.equal(t.device, String(expected.device));
      assert.equal(num(t.peakBytes), expected.peak_allocated_bytes);
      const first = await frameOnScreen(page);
      const css = await page.$eval('#timeline-canvas', (c) => c.getBoundingClientRect().toJSON());
      assert.equal(num(first.width), Math.round(css.width));
      assert.equal(num(first.height), Math.round(css.height));
      assert.equal(num(first.peakBytes), expected.peak_allocated_bytes);
      assert.equal(num(first.lastState), expected.states - 1);
      const pixels = await canvasDigest(page);

      // The same view asked for again (the reserved line off, then on): the same picture.
      await painted(page, () => page.click('#timeline-reserved-line'), 'the frame without the line');
      await painted(page, () => page.click('#timeline-reserved-line'), 'the frame with the line again');
      const asked = await frameOnScreen(page);
      for (const key of FRAME_VALUES) assert.equal(asked[key], first[key], key);
      assert.equal(await canvasDigest(page), pixels);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('shows the timeline\'s pixels and labels in a frame of their own: the overview and the views below follow', async () => {
    const { context, page, errors } = await app.open();
    try {
      await rehearsalEnded(page);
      // Which animation frame each change happened in: a change in a task between two frames
      // is painted in the next one; a change in a frame's animation-frame callbacks (this
      // counter's runs first) is painted in that frame.
      await page.evaluate(() => {
        window.seen = {};
        let frame = 0;
        const count = () => {
          requestAnimationFrame(count);
          frame += 1;
        };
        requestAnimationFrame(count);
        const note = (what, present) => {
          if (present && !(what in window.seen)) window.seen[what] = frame;
        };
        new MutationObserver(() => {
          note('pixels', Number(document.querySelector('#timeline')?.dataset.framesPainted ?? 0) > 0);
          note('labels', Boolean(document.querySelector('.timeline-overlay')?.dataset.labels));
          note('overview', Boolean(document.querySelector('#overview')));
          note('below', Boolean(document.querySelector('#breakdown, #phases')));
        }).observe(document.body, { subtree: true, childList: true, attributes: true });
      });
      await page.click('#open-example');
      assert.equal(await waitSettled(page), 'ready');
      await page.waitForSelector('#breakdown', { timeout: WAIT });
      assert.equal((await timeline(page)).firstFrame, 'with-file');
      const seen = await page.evaluate(() => window.seen);
      // The pixels arrive in a task: they show in the next frame, whose callbacks draw the
      // labels; the overview and the views below mount in the frames after it.
      assert.equal(seen.labels, seen.pixels + 1, `labels drawn in the frame that shows the pixels: ${JSON.stringify(seen)}`);
      assert.ok(seen.overview >= seen.pixels + 2, `the overview mounts after that frame: ${JSON.stringify(seen)}`);
      assert.ok(seen.below >= seen.pixels + 2, `the views below mount after that frame: ${JSON.stringify(seen)}`);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('is not painted for files opened together, which show side by side', async () => {
    const { context, page, errors } = await app.open();
    try {
      await rehearsalEnded(page);
      const bytes = fs.readFileSync(path.join(ROOT, 'static/example.pickle'));
      await page.setInputFiles('#file-input', [tempFile('rank0.pickle', bytes), tempFile('rank1.pickle', bytes)]);
      await page.waitForSelector('#files-view[data-rows="2"][data-waiting="0"]', { timeout: WAIT });
      await page.click('#files-table .files-row .open-file');
      assert.equal(await waitSettled(page), 'ready');
      await page.waitForSelector('#timeline[data-ready="true"]', { timeout: WAIT });
      await waitFrame(page, 0, 'the first frame');
      const t = await timeline(page);
      assert.equal(t.firstFrame, 'asked', 'the first frame is asked for when the file is shown alone');
      assert.equal(num(t.peakBytes), EXPECTED['example.pickle'].peak_allocated_bytes);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('is asked for when the window changed size since the page laid a plot out', async () => {
    const { context, page, errors } = await app.open();
    try {
      await rehearsalEnded(page);
      await page.setViewportSize({ width: 1100, height: 700 });
      await openTimeline(page, null);
      const t = await timeline(page);
      assert.equal(t.firstFrame, 'asked');
      const f = await frameOnScreen(page);
      const css = await page.$eval('#timeline-canvas', (c) => c.getBoundingClientRect().toJSON());
      assert.equal(num(f.width), Math.round(css.width));
      assert.equal(num(f.height), Math.round(css.height));
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });
});
