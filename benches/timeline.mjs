// Timeline benchmark: loads generated snapshots into the built viewer in headless Chromium
// through the file input, then measures the memory timeline as a user meets it:
//   decoded → timeline on screen (layout in the worker + first frame), from performance marks;
//   frame times while zooming and panning with a scripted gesture (one wheel or key input per
//     animation frame): the frame time, from an input to its frame on screen (the worker
//     paints while the page stays free), the worker's paint time, and the page's animation
//     frames (at 60 Hz a 16.7 ms interval means no frame was missed; the count of intervals
//     over 25 ms shows jank); the same while zooming the bytes (Shift+wheel, then ↑/↓ pans),
//     and the frame of a box zoom (Shift+drag);
//   hover hit-testing in the worker;
//   page memory with the timeline shown.
//
// Usage: node benches/timeline.mjs [--sizes 1M,6M] [--runs 2] [--depth 6-10] [--frames 120]
// Needs a release build in dist/ (./x build) and Debian's chromium (./x setup test).


import { marks, openApp, openFiles, waitSettled } from '../tests/e2e/helpers.mjs';
import { mb, measureSizes, median, option, parseCount, openMeasuredApp, residentMiB } from './common.mjs';
import { gesture } from './gesture.mjs';

const sizes = option('--sizes', '1M,6M').split(',').map(parseCount);
const runs = Number(option('--runs', '2'));
const [depthMin, depthMax] = option('--depth', '6-10').split('-').map(Number);
const frames = Number(option('--frames', '120'));

const targets = { firstPaint1M: 300, firstPaint6M: 1500, frame: 16, hit: 1 };

/**
 * Time from the end of a Shift+drag box (its pointerup) to the frame of the box on screen, as
 * the page sees them (three boxes, median).
 */
async function boxZoom(page) {
  const box = await page.$eval('#timeline-canvas', (c) => {
    const r = c.getBoundingClientRect();
    return { x: r.x, y: r.y, w: r.width, h: r.height };
  });
  const times = [];
  for (let i = 0; i < 3; i++) {
    await page.keyboard.press('0');
    await page.waitForTimeout(300);
    await page.evaluate(() => {
      const canvas = document.querySelector('#timeline-canvas');
      const root = document.querySelector('#timeline');
      window.__box = { up: null, painted: null };
      canvas.addEventListener('pointerup', () => { window.__box.up = performance.now(); }, { once: true, capture: true });
      const observer = new MutationObserver(() => {
        if (window.__box.up !== null && window.__box.painted === null) {
          window.__box.painted = performance.now();
          observer.disconnect();
        }
      });
      observer.observe(root, { attributes: true, attributeFilter: ['data-frames-painted'] });
    });
    await page.keyboard.down('Shift');
    await page.mouse.move(box.x + box.w * 0.3, box.y + box.h * 0.4);
    await page.mouse.down();
    await page.mouse.move(box.x + box.w * 0.6, box.y + box.h * 0.9, { steps: 4 });
    await page.mouse.up();
    await page.keyboard.up('Shift');
    const t = await page.waitForFunction(() => window.__box.painted !== null && window.__box.painted - window.__box.up, null, { timeout: 10_000 })
      .then((h) => h.jsonValue());
    times.push(t);
  }
  return median(times);
}

async function measure({ browser, server, browserPid }, file) {
  const { context, page, pagePids } = await openMeasuredApp(browser, browserPid, server, openApp);
  await page.setViewportSize({ width: 1400, height: 1000 });
  await page.waitForTimeout(1000);
  await openFiles(page, file);
  const status = await waitSettled(page, 600_000);
  if (status !== 'ready') throw new Error(`${file}: ${status}`);
  await page.waitForFunction(() => performance.getEntriesByName('memsight:timeline-painted').length > 0, null, { timeout: 120_000 });
  const [decoded] = (await marks(page, 'memsight:decoded')).slice(-1);
  const [painted] = (await marks(page, 'memsight:timeline-painted')).slice(-1);
  const info = await page.$eval('#timeline', (e) => ({ layout: Number(e.dataset.layoutMs), elements: Number(e.dataset.elements), detail: Number(e.dataset.detail) }));
  const size = await page.$eval('#timeline-frame', (e) => `${e.dataset.width}×${e.dataset.height}`);
  const memory = residentMiB(pagePids);
  const g = await page.evaluate(gesture, { count: frames, axis: 'x' });
  await page.keyboard.press('0');
  await page.waitForTimeout(300);
  const y = await page.evaluate(gesture, { count: frames, axis: 'y' });
  await page.keyboard.press('0');
  const boxFrame = await boxZoom(page);

  // Hover: move across the plot's bottom row, reading the worker's hit-test time.
  const box = await page.$eval('#timeline-canvas', (c) => {
    const r = c.getBoundingClientRect();
    return { x: r.x, y: r.y, w: r.width, h: r.height };
  });
  const hits = [];
  for (let i = 0; i < 40; i++) {
    await page.mouse.move(box.x + ((i + 0.5) / 40) * box.w, box.y + box.h - 4);
    const ms = await page
      .waitForFunction(() => document.querySelector('#timeline-tooltip')?.dataset.hitMs, null, { timeout: 2000 })
      .then((h) => h.jsonValue())
      .catch(() => undefined);
    if (ms !== undefined) hits.push(Number(ms));
  }
  await context.close();
  return {
    firstPaint: painted - decoded,
    layout: info.layout,
    elements: info.elements,
    detail: info.detail,
    size,
    memory,
    tick: median(g.ticks),
    janky: g.ticks.filter((t) => t > 25).length,
    ticks: g.ticks.length,
    latency: median(g.latencies),
    paint: median(g.paints),
    overlay: median(g.overlays),
    frames: g.paints.length,
    yLatency: median(y.latencies),
    yJanky: y.ticks.filter((t) => t > 25).length,
    box: boxFrame,
    hit: hits.length ? median(hits) : NaN,
  };
}

const rows = await measureSizes({ sizes, runs, depthMin, depthMax }, measure, ({ entries, bytes, results }) => {
  const pick = (k) => median(results.map((x) => x[k]));
  const row = {
    entries,
    bytes,
    firstPaint: pick('firstPaint'),
    layout: pick('layout'),
    elements: results[0].elements,
    detail: results[0].detail,
    size: results[0].size,
    memory: Math.max(...results.map((x) => x.memory)),
    tick: pick('tick'),
    janky: Math.max(...results.map((x) => x.janky)),
    ticks: results[0].ticks,
    latency: pick('latency'),
    paint: pick('paint'),
    overlay: pick('overlay'),
    frames: pick('frames'),
    hit: pick('hit'),
    yLatency: pick('yLatency'),
    yJanky: Math.max(...results.map((x) => x.yJanky)),
    box: pick('box'),
  };
  console.error(`${entries}: timeline ${row.firstPaint.toFixed(0)} ms after decoding, frame ${row.latency.toFixed(1)} ms`);
  return row;
});

const check = (ok) => (ok ? '✓' : '✗');
console.log(`Timeline benchmark: ${runs} run(s) per size, medians, ${depthMin}–${depthMax} frames per traceback; headless Chromium, ${frames}-frame gesture.`);
console.log(`Targets: layout + first paint ≤ ${targets.firstPaint1M} ms after decoding at 1M, ≤ ${targets.firstPaint6M} ms at 6M; median frame ≤ ${targets.frame} ms; hover hit test ≤ ${targets.hit} ms.\n`);
console.log('| entries | file MB | allocations (drawn) | decoded → timeline on screen (ms) | of which layout (ms) | frame: input → on screen (ms) | worker paint (ms, canvas px) | overlay (ms) | page animation frames: median ms, over 25 ms | zooming the bytes: frame (ms), frames over 25 ms | box zoom: frame (ms) | hit test (ms) | page memory (MiB) |');
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  const target = r.entries === 6e6 ? targets.firstPaint6M : r.entries === 1e6 ? targets.firstPaint1M : Infinity;
  const first = `${r.firstPaint.toFixed(0)}${Number.isFinite(target) ? ' ' + check(r.firstPaint <= target) : ''}`;
  const hit = Number.isNaN(r.hit) ? 'n/a' : `${r.hit < 0.1 ? '< 0.1' : r.hit.toFixed(2)} ${check(r.hit <= targets.hit)}`;
  console.log(`| ${r.entries.toLocaleString('en')} | ${mb(r.bytes).toFixed(1)} | ${r.elements.toLocaleString('en')} (${r.detail.toLocaleString('en')}) | ${first} | ${r.layout.toFixed(0)} | ${r.latency.toFixed(1)} ${check(r.latency <= targets.frame)} | ${r.paint.toFixed(1)} (${r.size}) | ${r.overlay.toFixed(1)} | ${r.tick.toFixed(1)}, ${r.janky} of ${r.ticks} | ${r.yLatency.toFixed(1)} ${check(r.yLatency <= targets.frame)}, ${r.yJanky} | ${r.box.toFixed(1)} ${check(r.box <= targets.frame)} | ${hit} | ${r.memory.toFixed(0)} |`);
}
console.log('\nWorker times come from performance.now() in the worker, which browsers round to 0.1 ms.');
