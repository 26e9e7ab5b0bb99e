// End-to-end tests of the timeline on real training runs (dist/) in Debian's headless
// Chromium: the colours of a zoomed-out run of a large model, y zoom, the detail's stops, the
// user's code first in stacks, OOMs that explain themselves, overlay labels that never
// overlap, and a layout where the plot and the pinned stack share the screen.
//
// Files are real snapshots read from ../shared/fixtures/real (the tests skip when absent),
// checked against tests/expectations/real.json (CPython).
//
// Run with `./x test` (which builds dist/ first) or `node --test tests/e2e/training.test.mjs`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

import {
  EXPECTATIONS, openFiles, REAL_FIXTURES, ROOT, sharedBrowser, waitSettled,
} from './helpers.mjs';

/** A CS336 full training step (fp32, 51 GiB, recorded with C++ stacks). */
const FULL_STEP = 'kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_fullstep_.pickle';
/** Three devices, an OOM on cuda:1. */
const MULTI_DEVICE_OOM = 'Constructor-Sun__code_location__memory_snapshot.pickle';
const WAIT = 20_000;
const MIB = 1024 * 1024;
/** Light theme colours of the worker's pixels. */
const BACKGROUND = '255,255,255';
const LINE = '30,30,30';
const SMALL = '170,176,186';
const PINNED = '220,20,60';

const have = (name) => fs.existsSync(path.join(REAL_FIXTURES, name));
const skipWithout = (name) => (have(name) ? false : `${name} not found in ${REAL_FIXTURES}`);
const expectations = fs.existsSync(EXPECTATIONS) ? JSON.parse(fs.readFileSync(EXPECTATIONS, 'utf8')) : {};

const shared = sharedBrowser();

/** Opens a real fixture in a fresh page of `width`×`height`; resolves once its timeline is painted. */
async function open(name, width = 1400, height = 900) {
  const app = await shared.open({ viewport: { width, height } });
  await openFiles(app.page, path.join(REAL_FIXTURES, name));
  assert.equal(await waitSettled(app.page), 'ready');
  await app.page.waitForFunction(() => performance.getEntriesByName('memsight:timeline-painted').length > 0, null, { timeout: WAIT });
  await settle(app.page);
  // These tests read each allocation's own colour (categories.test.mjs tests the others).
  await app.page.click('#timeline-colour-allocation');
  await app.page.waitForSelector('#timeline[data-colour-by="allocation"]');
  await settle(app.page);
  return app;
}

const framesPainted = (page) => page.$eval('#timeline', (e) => Number(e.dataset.framesPainted || 0));

/** Waits until no frame has been painted for a while. */
async function settle(page, quiet = 200) {
  let last = await framesPainted(page);
  for (let i = 0; i < 50; i++) {
    await page.waitForTimeout(quiet);
    const now = await framesPainted(page);
    if (now === last) return;
    last = now;
  }
}

/** The plot canvas' pixels: colour counts, and per column the count of `colour` pixels. */
async function scan(page, colour = null) {
  return page.$eval('#timeline-canvas', (canvas, colour) => {
    const { width: W, height: H } = canvas;
    const data = canvas.getContext('2d').getImageData(0, 0, W, H).data;
    const colours = {};
    const columns = new Array(W).fill(0);
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        const i = (y * W + x) * 4;
        const key = `${data[i]},${data[i + 1]},${data[i + 2]}`;
        colours[key] = (colours[key] || 0) + 1;
        if (key === colour) columns[x] += 1;
      }
    }
    return { W, H, colours, columns };
  }, colour);
}

/** Page coordinates of device pixel (x, y) of the plot canvas. */
async function canvasPoint(page, x, y) {
  const { left, top, dpr } = await page.$eval('#timeline-canvas', (c) => {
    const r = c.getBoundingClientRect();
    return { left: r.left, top: r.top, dpr: c.width / r.width };
  });
  return { x: left + (x + 0.5) / dpr, y: top + (y + 0.5) / dpr };
}

/** Polls until `selector`'s attribute `name` satisfies `predicate` (the page forbids eval). */
async function waitAttr(page, selector, name, predicate, what) {
  let got;
  for (const end = Date.now() + WAIT; Date.now() < end; await page.waitForTimeout(50)) {
    got = await page.$eval(selector, (e, n) => e.getAttribute(n), name).catch(() => null);
    if (got != null && predicate(got)) return got;
  }
  assert.fail(`${what}: ${selector} ${name} is ${JSON.stringify(got)}`);
}

describe('a zoomed-out training run', { skip: skipWithout(FULL_STEP) }, () => {
  it('keeps the colours of allocations thinner than a pixel: a dozen colours, no grey block', async () => {
    const { context, page, errors } = await open(FULL_STEP);
    try {
      const { colours } = await scan(page);
      const painted = Object.entries(colours).filter(([c]) => c !== BACKGROUND && c !== LINE);
      const total = painted.reduce((n, [, count]) => n + count, 0);
      assert.ok(painted.length >= 12, `only ${painted.length} colours painted`);
      const grey = colours[SMALL] || 0;
      assert.ok(grey < total / 2, `the small band's grey covers ${grey} of ${total} painted pixels`);
      // Most allocations of this run are thinner than a pixel: they are blended, not drawn one by one.
      const t = await page.$eval('#timeline', (e) => ({ ...e.dataset }));
      const drawn = Number(await page.$eval('#timeline-frame', (e) => e.dataset.drawn));
      assert.ok(drawn * 10 < Number(t.elements), `${drawn} of ${t.elements} a pixel tall`);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('zooms the bytes so that a 100 MiB allocation of a 51 GiB run is at least 20 pixels tall', async () => {
    const { context, page } = await open(FULL_STEP);
    try {
      // Find an allocation of about 100 MiB under the pointer, bottom up, in the middle column.
      const { W, H } = await scan(page);
      const x = Math.floor(W * 0.55);
      let found = null;
      for (let y = H - 3; y > H * 0.2 && !found; y -= 1) {
        const p = await canvasPoint(page, x, y);
        await page.mouse.move(p.x, p.y);
        const size = await page.waitForSelector('#timeline-tooltip', { timeout: 2_000 })
          .then((t) => t.getAttribute('data-size')).catch(() => null);
        if (size && Number(size) >= 64 * MIB && Number(size) <= 160 * MIB) found = { y, size: Number(size) };
      }
      assert.ok(found, 'an allocation of 64–160 MiB under the middle column');
      let p = await canvasPoint(page, x, found.y);
      await page.mouse.click(p.x, p.y);
      await waitAttr(page, '#timeline', 'data-pinned', (v) => v !== '', 'a click pins it');
      assert.equal(Number(await page.getAttribute('#pinned', 'data-size')), found.size);
      await settle(page);
      const tallness = async () => Math.max(...(await scan(page, PINNED)).columns);
      assert.ok((await tallness()) < 20, 'fitted, it is thin');
      // Shift+wheel zooms the bytes around the pointer, which stays on the allocation.
      await page.keyboard.down('Shift');
      for (let i = 0; i < 12 && (await tallness()) < 20; i++) {
        p = await canvasPoint(page, x, found.y);
        await page.mouse.move(p.x, p.y);
        await page.mouse.wheel(0, -400);
        await settle(page);
      }
      await page.keyboard.up('Shift');
      assert.equal(await page.getAttribute('#timeline', 'data-y-zoomed'), 'true');
      const tall = await tallness();
      assert.ok(tall >= 20, `the pinned allocation is ${tall} px tall after zooming the bytes`);
      const [yMin, yMax] = await page.$eval('#timeline-frame', (e) => [Number(e.dataset.yMin), Number(e.dataset.yMax)]);
      assert.ok(yMin > 0 && yMax - yMin < 20 * 1024 * MIB, `bytes ${yMin}–${yMax}`);
      // F fits the bytes again.
      await page.keyboard.press('f');
      await waitAttr(page, '#timeline', 'data-y-zoomed', (v) => v === 'false', 'F fits the bytes');
      await waitAttr(page, '#timeline-frame', 'data-y-min', (v) => v === '0', 'the fitted frame starts at 0 bytes');
    } finally {
      await context.close();
    }
  });

  it('box zoom (Shift+drag) shows the box on both axes', async () => {
    const { context, page } = await open(FULL_STEP);
    try {
      const { W, H } = await scan(page);
      const before = await page.$eval('#timeline', (e) => [Number(e.dataset.viewStart), Number(e.dataset.viewEnd)]);
      const a = await canvasPoint(page, Math.floor(W * 0.4), Math.floor(H * 0.5));
      const b = await canvasPoint(page, Math.floor(W * 0.6), Math.floor(H * 0.8));
      await page.keyboard.down('Shift');
      await page.mouse.move(a.x, a.y);
      await page.mouse.down();
      await page.mouse.move(b.x, b.y, { steps: 5 });
      assert.ok(await page.isVisible('#timeline-zoom-box'), 'the box is drawn while dragging');
      await page.mouse.up();
      await page.keyboard.up('Shift');
      await waitAttr(page, '#timeline', 'data-y-zoomed', (v) => v === 'true', 'the bytes are zoomed');
      await settle(page);
      const after = await page.$eval('#timeline', (e) => [Number(e.dataset.viewStart), Number(e.dataset.viewEnd)]);
      const span = before[1] - before[0];
      assert.ok(Math.abs((after[1] - after[0]) - span * 0.2) < span * 0.02, `x range ${after} of ${before}`);
      const [yMin, yMax] = await page.$eval('#timeline-frame', (e) => [Number(e.dataset.yMin), Number(e.dataset.yMax)]);
      assert.ok(yMin > 0 && yMax > yMin);
    } finally {
      await context.close();
    }
  });

  it('"10%" draws the 10% largest allocations, as memory_viz', async () => {
    const { context, page } = await open(FULL_STEP);
    try {
      const elements = Number(await page.getAttribute('#timeline', 'data-elements'));
      const tenth = Math.round(elements / 10);
      await page.$eval('#timeline-detail', (input) => {
        input.value = '500';
        input.dispatchEvent(new Event('input', { bubbles: true }));
      });
      // N is shown while dragging.
      assert.equal(await page.textContent('#timeline-detail-count'), tenth.toLocaleString('en-US'));
      await page.$eval('#timeline-detail', (input) => input.dispatchEvent(new Event('change', { bubbles: true })));
      await waitAttr(page, '#timeline', 'data-detail', (v) => v !== String(elements), 'the layout at 10%');
      assert.equal(Number(await page.getAttribute('#timeline', 'data-detail')), tenth);
      assert.equal(await page.getAttribute('#timeline-detail-count', 'data-value'), String(tenth));
      const stops = await page.$$eval('.detail-stop', (s) => s.map((e) => e.textContent));
      assert.deepEqual(stops, ['10%', '50%', 'all']);
    } finally {
      await context.close();
    }
  });
});

describe('stacks on a real training run', { skip: skipWithout(FULL_STEP) }, () => {
  it('a backward allocation without Python frames is named by its backward function', async () => {
    const { context, page } = await open(FULL_STEP);
    try {
      await page.fill('#timeline-search', 'BmmBackward0');
      await page.press('#timeline-search', 'Enter');
      await waitAttr(page, '#timeline', 'data-pinned', (v) => v !== '', 'the first match is pinned');
      await page.waitForSelector('#pinned-made-by');
      assert.equal(await page.getAttribute('#pinned-made-by', 'data-user'), 'false');
      assert.equal(await page.textContent('#pinned-made-by code'), 'BmmBackward0');
      // The frame naming it is the first one shown; the allocator's frames are folded.
      const visible = await page.$$eval('#stack li.frame', (items) => items.filter((li) => li.checkVisibility()).map((li) => li.querySelector('.frame-name').textContent));
      assert.match(visible[0], /BmmBackward0::apply/);
      const folds = await page.$$eval('#stack li.fold', (items) => items.map((li) => li.textContent));
      assert.match(folds[0], /^▸ \d+ framework frames$/);
    } finally {
      await context.close();
    }
  });

  it('the pinned stack opens at the user\'s code, and the plot and the stack share a 1024×700 screen', async () => {
    const { context, page } = await open(FULL_STEP, 1024, 700);
    try {
      await page.fill('#timeline-search', 'scaled_dot_product_attention');
      await page.press('#timeline-search', 'Enter');
      await waitAttr(page, '#timeline', 'data-pinned', (v) => v !== '', 'the first match is pinned');
      await page.waitForSelector('#stack');
      assert.equal(await page.getAttribute('#pinned-made-by', 'data-user'), 'true');
      const first = await page.$$eval('#stack li.frame', (items) => {
        const li = items.find((i) => i.checkVisibility());
        return { name: li.querySelector('.frame-name').textContent, file: li.querySelector('.frame-file').textContent, class: li.dataset.class };
      });
      assert.equal(first.class, 'userpython');
      assert.equal(first.name, 'scaled_dot_product_attention');
      assert.match(first.file, /\.py:\d+$/);
      // Both on screen together, without scrolling.
      const inView = (selector) => page.$eval(selector, (e) => {
        const r = e.getBoundingClientRect();
        return r.top < window.innerHeight && r.bottom > 0 && r.height > 0;
      });
      assert.equal(await page.evaluate(() => window.scrollY), 0);
      assert.ok(await inView('#timeline-canvas'), 'the plot is on screen');
      assert.ok(await inView('#stack li.frame.user'), 'the user frame of the pinned stack is on screen');
    } finally {
      await context.close();
    }
  });
});

describe('roles of memory made before recording', { skip: skipWithout(FULL_STEP) }, () => {
  it('a parameter from before the trace says it is inferred and why, in the table and pinned, as the command line does', async () => {
    const { context, page } = await open(FULL_STEP);
    try {
      // The breakdown's legend at the peak: 12.7 GiB of parameters, every byte deduced.
      await page.waitForSelector('#legend-roles [data-category="parameters"]', { timeout: WAIT });
      const legend = await page.$eval('#legend-roles [data-category="parameters"]', (li) => ({
        value: Number(li.dataset.value),
        inferred: Number(li.dataset.inferred),
        label: li.querySelector('.legend-label').textContent,
      }));
      assert.ok(legend.value > 12 * 1024 * MIB, `parameters at the peak: ${legend.value} bytes`);
      assert.equal(legend.inferred, legend.value);
      assert.equal(legend.label, 'Parameters (inferred)');
      const unknown = await page.$eval('#legend-roles [data-category="unknown"]', (li) => Number(li.dataset.value));
      assert.equal(unknown, 0, 'nothing at the peak is unknown');
      // Picked in the legend, the table lists the parameters; the largest is selected.
      await page.click('#legend-roles [data-category="parameters"] button');
      await page.waitForFunction(() => {
        const rows = [...document.querySelectorAll('#allocations-table .tr.row')];
        return rows.length > 0 && rows.every((r) => r.dataset.role === 'parameters');
      }, null, { timeout: WAIT });
      const first = await page.$eval('#allocations-table .tr.row', (r) => ({ element: r.dataset.element, allocation: r.dataset.allocation }));
      await page.click(`#allocations-table .tr.row[data-element="${first.element}"]`);
      await page.waitForSelector('#table-detail-role', { timeout: WAIT });
      const inTable = await page.$eval('#table-detail-role', (p) => ({ role: p.dataset.role, inferred: p.dataset.inferred, text: p.textContent }));
      assert.equal(inTable.role, 'parameters');
      assert.equal(inTable.inferred, 'true');
      assert.match(inTable.text, /^Parameters inferred: alive since before recording and never freed; one of the \d+ parameters of its size \(.+\): the run holds \d+ gradients of that size at once, one per parameter \(one made at event [\d,]+\)$/);
      // Shown on the timeline, the pinned allocation gives the same reason.
      await page.click('#table-show-on-timeline');
      await waitAttr(page, '#timeline', 'data-pinned', (v) => v === first.element, 'the row is pinned on the timeline');
      await page.waitForSelector('#pinned-role', { timeout: WAIT });
      assert.equal(await page.textContent('#pinned-role'), inTable.text);
      // The command line gives it the same reason, from the same core.
      const cli = JSON.parse(execFileSync('cargo', ['run', '-q', '-p', 'memsight-cli', '--', 'table', path.join(REAL_FIXTURES, FULL_STEP), '--scope', 'peak', '--role', 'parameters', '--json'], {
        cwd: ROOT,
        encoding: 'utf8',
        maxBuffer: 64 << 20,
      })).devices['0'];
      const row = cli.rows.find((r) => String(r.allocation) === first.allocation);
      assert.ok(row, `allocation ${first.allocation} in the command line's table`);
      assert.equal(row.role_inferred, true);
      assert.equal(`Parameters inferred: ${row.role_reason}`, inTable.text);
    } finally {
      await context.close();
    }
  });
});

describe('an OOM on the second of three devices', { skip: skipWithout(MULTI_DEVICE_OOM) }, () => {
  it('opens on the OOM\'s device and says so; the pinned OOM shows its stack and what was alive', async () => {
    const { context, page, errors } = await open(MULTI_DEVICE_OOM);
    try {
      const expected = expectations[MULTI_DEVICE_OOM].devices['1'];
      assert.equal(await page.$eval('#device-picker', (s) => s.value), '1');
      assert.match(await page.textContent('#device-choice'), new RegExp(`cuda:1, where an allocation failed \\(event ${expected.oom_index}\\)`));
      // The cards say when they were measured.
      const metric = (key) => page.$eval(`[data-metric="${key}"]`, (e) => Number(e.dataset.value));
      assert.equal(await metric('oom-event'), expected.oom_index);
      assert.equal(await metric('allocated-at-oom-bytes'), expected.allocated_at_oom_bytes);
      assert.equal(await metric('reserved-at-oom-bytes'), expected.reserved_at_oom_bytes);
      const groups = await page.$$eval('.metric-group h2', (h) => h.map((e) => e.textContent));
      assert.deepEqual(groups.slice(0, 3), ['At the peak', 'At the out-of-memory', 'At the end']);

      const labels = JSON.parse(await page.getAttribute('#timeline-overlay', 'data-labels'));
      const oomLabel = labels.find((l) => l.kind === 'oom');
      assert.ok(oomLabel, `an OOM label: ${JSON.stringify(labels)}`);
      // Hover the mark: a tooltip; click it: pinned.
      const box = await page.$eval('#timeline-canvas', (c) => { const r = c.getBoundingClientRect(); return { left: r.left, top: r.top, height: r.height }; });
      const markX = box.left + oomLabel.x - 4;
      await page.mouse.move(markX, box.top + box.height / 2);
      await page.waitForSelector('#timeline-tooltip[data-oom]', { timeout: WAIT });
      await page.mouse.click(markX, box.top + box.height / 2);
      await page.waitForSelector('#pinned-oom', { timeout: WAIT });
      const oom = await page.$eval('#pinned-oom', (e) => ({ ...e.dataset }));
      assert.equal(Number(oom.event), expected.oom_index);
      assert.equal(Number(oom.liveBytes), expected.allocated_at_oom_bytes, 'what was alive adds up to what was allocated');
      assert.equal(Number(oom.reserved), expected.reserved_at_oom_bytes);
      assert.ok(Number(oom.requested) > Number(oom.free), 'the request did not fit');
      assert.ok((await page.$$('#oom-largest tr')).length > 0, 'the largest allocations alive');
      assert.ok((await page.$$('#oom-call-sites tr')).length > 0, 'the call sites holding the most');
      assert.ok((await page.$$('#stack li.frame')).length > 0, 'the failed request\'s stack');
      // One of the largest can be pinned from there.
      await page.click('#oom-largest tr:first-child .link-button');
      await waitAttr(page, '#timeline', 'data-pinned', (v) => v !== '', 'an allocation is pinned');
      assert.equal(await page.$('#pinned-oom'), null);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('an unused device says it used no memory instead of drawing an empty chart', async () => {
    const { context, page } = await open(MULTI_DEVICE_OOM);
    try {
      await page.selectOption('#device-picker', '3');
      await page.waitForSelector('#unused-device');
      assert.match(await page.textContent('#unused-device'), /cuda:3 used no memory/);
      assert.equal(await page.$('#timeline'), null);
      assert.equal(await page.$('[data-warning="trace-empty"]'), null);
    } finally {
      await context.close();
    }
  });
});

describe('the time axis and the reference', { skip: skipWithout(FULL_STEP) }, () => {
  it('time ticks read whole ("+…" with a unit), and ? opens the keyboard and mouse reference', async () => {
    const { context, page } = await open(FULL_STEP);
    try {
      await page.click('#timeline-axis-time');
      await waitAttr(page, '#timeline', 'data-mode', (v) => v === 'time', 'the time axis');
      await settle(page);
      const ticks = JSON.parse(await page.getAttribute('#timeline-overlay', 'data-labels')).filter((l) => l.kind === 'x-tick');
      assert.ok(ticks.length >= 3, JSON.stringify(ticks));
      for (const t of ticks) assert.match(t.text, /^\+\d[\d.,]* (µs|ms|s|min \d+ s)$/, `a tick reads "${t.text}"`);
      assert.equal(ticks[0].text, '+0 µs');
      // Keys go to the plot once it has focus; a click there may pin, which Escape undoes.
      await page.click('#timeline-canvas', { position: { x: 200, y: 40 } });
      await page.keyboard.press('Escape');
      await page.keyboard.press('?');
      await page.waitForSelector('#timeline-help');
      assert.match(await page.textContent('#timeline-help'), /Shift \+ wheel/);
      await page.keyboard.press('Escape');
      await page.waitForSelector('#timeline-help', { state: 'detached' });
    } finally {
      await context.close();
    }
  });
});

describe('overlay labels', { skip: skipWithout(MULTI_DEVICE_OOM) || skipWithout(FULL_STEP) }, () => {
  for (const [width, height] of [[1024, 700], [1920, 1080]]) {
    it(`never overlap nor leave the plot at ${width}×${height}`, async () => {
      for (const name of [MULTI_DEVICE_OOM, FULL_STEP]) {
        const { context, page } = await open(name, width, height);
        try {
          const labels = JSON.parse(await page.getAttribute('#timeline-overlay', 'data-labels'));
          const { w, h } = await page.$eval('#timeline-canvas', (c) => ({ w: c.clientWidth, h: c.clientHeight }));
          assert.ok(labels.some((l) => l.kind === 'y-tick') && labels.some((l) => l.kind === 'x-tick'), `${name}: ${JSON.stringify(labels)}`);
          for (const [i, a] of labels.entries()) {
            assert.ok(a.x >= 0 && a.y >= 0 && a.x + a.w <= w + 0.5 && a.y + a.h <= h + 0.5, `${name}: ${a.text} leaves the plot`);
            for (const b of labels.slice(i + 1)) {
              const apart = a.x + a.w <= b.x || b.x + b.w <= a.x || a.y + a.h <= b.y || b.y + b.h <= a.y;
              assert.ok(apart, `${name}: "${a.text}" overlaps "${b.text}"`);
            }
          }
          if (name === MULTI_DEVICE_OOM) {
            assert.ok(labels.some((l) => l.kind === 'oom') && labels.some((l) => l.kind === 'peak'), 'the OOM and the peak both named');
          }
        } finally {
          await context.close();
        }
      }
    });
  }
});
