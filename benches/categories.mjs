// Categories benchmark: loads generated snapshots into the built viewer in headless Chromium
// through the file input, then measures what categories cost as a user meets them:
//   categorising every allocation at load, in the worker (the page's data-categorise-ms);
//   a rule added in the editor: the worker's re-categorising, and the time from the click on
//     "Apply" to the timeline repainted and the pie redrawn in the new categories;
//   a moment picked by a click on the timeline: the worker's breakdown at that moment, and the
//     time from the click to every chart of the moment near the screen drawn;
//   timeline frames while zooming and panning (the scripted gesture of benches/gesture.mjs),
//     coloured by role, by component and by allocation, in one run so they compare.
//
// Usage: node benches/categories.mjs [--sizes 1M,6M] [--runs 2] [--depth 6-10] [--frames 90]
// Needs a release build in dist/ (./x build) and Debian's chromium (./x setup test).

import { openApp, openFiles, waitSettled } from '../tests/e2e/helpers.mjs';
import { mb, measureSizes, median, openMeasuredApp, option, parseCount } from './common.mjs';
import { gesture } from './gesture.mjs';

const sizes = option('--sizes', '1M,6M').split(',').map(parseCount);
const runs = Number(option('--runs', '2'));
const [depthMin, depthMax] = option('--depth', '6-10').split('-').map(Number);
const frames = Number(option('--frames', '90'));
const COLOURINGS = ['role', 'component', 'allocation'];
/** Moments picked on the timeline per run (fractions of the plot's width). */
const PICKS = [0.15, 0.35, 0.55, 0.75, 0.9];

const targets = { categorise1M: 150, categorise6M: 600, recategorise: 300, moment: 50, frame: 16 };

/**
 * Runs in the page: arms a clock started by the next `event` on `selector` (capture phase) and
 * stopped when `done()` first holds after it, checked on every DOM change under #breakdown
 * and #timeline (as benches/timeline.mjs times a frame: drawn, not yet composited). Stored in
 * window.__clock.
 */
function armClock({ selector, event, done }) {
  const check = new Function(`return (${done})`)();
  window.__clock = { start: null, end: null };
  const target = document.querySelector(selector);
  target.addEventListener(event, () => { window.__clock.start = performance.now(); }, { once: true, capture: true });
  const roots = ['#breakdown', '#timeline'].map((s) => document.querySelector(s)).filter(Boolean);
  const observer = new MutationObserver(() => {
    if (window.__clock.start === null || window.__clock.end !== null || !check(window.__clock)) return;
    window.__clock.end = performance.now();
    observer.disconnect();
  });
  for (const root of roots) observer.observe(root, { attributes: true, childList: true, subtree: true });
}

const clockRead = (page) => page
  .waitForFunction(() => window.__clock.end > 0 && window.__clock.end - window.__clock.start, null, { timeout: 30_000 })
  .then((h) => h.jsonValue());

/**
 * Every chart of the moment shown that is near the screen has been drawn; those further below
 * are drawn once scrolled to (`src/ui/near_screen.rs`). At a new `state` when given, which the
 * timeline is scrolled to: at least one chart is near it then.
 */
const MOMENT_DRAWN = `(clock) => {
  const moment = document.querySelector('#breakdown-moment');
  if (!moment || (clock.state !== undefined && moment.dataset.state === clock.state)) return false;
  const near = [...moment.querySelectorAll('.chart-card[data-near="true"]')];
  return (clock.state === undefined || near.length > 0) && near.every((c) => Number(c.dataset.draws) >= 1);
}`;

async function settle(page, quiet = 300) {
  const painted = () => page.$eval('#timeline', (e) => Number(e.dataset.framesPainted || 0));
  let last = await painted();
  for (let i = 0; i < 40; i++) {
    await page.waitForTimeout(quiet);
    const now = await painted();
    if (now === last) return;
    last = now;
  }
}

/** A click on the timeline at `fx` of its width: the time until the moment's charts near the screen are drawn. */
async function pickMoment(page, fx) {
  const box = await page.$eval('#timeline-canvas', (c) => {
    c.scrollIntoView({ block: 'center' });
    const r = c.getBoundingClientRect();
    return { x: r.x, y: r.y, w: r.width, h: r.height };
  });
  const state = await page.$eval('#breakdown-moment', (e) => e.dataset.state);
  await page.evaluate(armClock, { selector: '#timeline-canvas', event: 'pointerdown', done: MOMENT_DRAWN });
  await page.evaluate((s) => { window.__clock.state = s; }, state);
  await page.mouse.click(box.x + box.w * fx, box.y + box.h * 0.5);
  const total = await clockRead(page);
  const worker = Number(await page.$eval('#breakdown-moment', (e) => e.dataset.computeMs));
  return { total, worker };
}

/** A rule added and applied: the worker's time, and the click → timeline and pie repainted. */
async function recategorise(page) {
  await page.click('#rule-add');
  await page.fill('.rule[data-rule="0"] .rule-pattern', 'forward');
  await page.press('.rule[data-rule="0"] .rule-pattern', 'Tab');
  await page.selectOption('.rule[data-rule="0"] .rule-role', 'activations');
  await page.$eval('#rules-apply', (b) => b.scrollIntoView({ block: 'center' }));
  const generation = await page.$eval('#breakdown', (e) => e.dataset.generation);
  const painted = await page.$eval('#timeline', (e) => e.dataset.framesPainted);
  await page.evaluate(armClock, {
    selector: '#rules-apply',
    event: 'click',
    // The new generation, a timeline frame painted since, and the moment's charts redrawn.
    done: `(clock) => document.querySelector('#breakdown').dataset.generation !== clock.generation
      && document.querySelector('#timeline').dataset.framesPainted !== clock.painted
      && (${MOMENT_DRAWN})({})
      && document.querySelector('#breakdown-moment').dataset.generation === document.querySelector('#breakdown').dataset.generation`,
  });
  await page.evaluate(([g, p]) => { window.__clock.generation = g; window.__clock.painted = p; }, [generation, painted]);
  await page.click('#rules-apply');
  const total = await clockRead(page);
  const worker = Number(await page.$eval('#categorise-ms', (e) => e.dataset.value));
  return { total, worker };
}

async function measure({ browser, server, browserPid }, file) {
  const { context, page } = await openMeasuredApp(browser, browserPid, server, openApp);
  try {
    await page.setViewportSize({ width: 1400, height: 1000 });
    await page.waitForTimeout(1000);
    await openFiles(page, file);
    const status = await waitSettled(page, 600_000);
    if (status !== 'ready') throw new Error(`${file}: ${status}`);
    await page.waitForSelector('#timeline[data-ready="true"]', { timeout: 120_000 });
    await page.waitForSelector('#breakdown-moment', { timeout: 120_000 });
    await settle(page);
    const categorise = Number(await page.$eval('#snapshot', (e) => e.dataset.categoriseMs));

    const moments = [];
    for (const fx of PICKS) moments.push(await pickMoment(page, fx));

    const colourings = {};
    for (const colour of COLOURINGS) {
      await page.click(`#timeline-colour-${colour}`);
      await page.keyboard.press('0');
      await settle(page);
      const g = await page.evaluate(gesture, { count: frames, axis: 'x' });
      colourings[colour] = { latency: median(g.latencies), paint: median(g.paints) };
    }
    await page.click('#timeline-colour-role');
    await page.keyboard.press('0');
    await settle(page);
    const rule = await recategorise(page);
    return {
      categorise,
      recategoriseWorker: rule.worker,
      recategorise: rule.total,
      momentWorker: median(moments.map((m) => m.worker)),
      moment: median(moments.map((m) => m.total).filter((t) => !Number.isNaN(t))),
      colourings,
    };
  } finally {
    await context.close();
  }
}

const rows = await measureSizes({ sizes, runs, depthMin, depthMax }, measure, ({ entries, bytes, results }) => {
  const pick = (f) => median(results.map(f));
  const row = {
    entries,
    bytes,
    categorise: pick((x) => x.categorise),
    recategoriseWorker: pick((x) => x.recategoriseWorker),
    recategorise: pick((x) => x.recategorise),
    momentWorker: pick((x) => x.momentWorker),
    moment: pick((x) => x.moment),
    colourings: Object.fromEntries(COLOURINGS.map((c) => [c, {
      latency: pick((x) => x.colourings[c].latency),
      paint: pick((x) => x.colourings[c].paint),
    }])),
  };
  console.error(`${entries}: categorised in ${row.categorise.toFixed(0)} ms, rule applied in ${row.recategorise.toFixed(0)} ms, moment in ${row.moment.toFixed(0)} ms`);
  return row;
});

const check = (ok) => (ok ? '✓' : '✗');
const ms = (x) => (Number.isNaN(x) ? 'n/a' : x < 10 ? x.toFixed(1) : x.toFixed(0));
console.log(`Categories benchmark: ${runs} run(s) per size, medians, ${depthMin}–${depthMax} frames per traceback; headless Chromium, ${frames}-frame gesture per colouring, ${PICKS.length} moments picked per run.`);
console.log(`Targets: categorising at load ≤ ${targets.categorise1M} ms at 1M, ≤ ${targets.categorise6M} ms at 6M; a rule edit to the timeline and charts repainted ≤ ${targets.recategorise} ms at 1M; charts at a new moment ≤ ${targets.moment} ms; frames ≤ ${targets.frame} ms with category colouring.\n`);
console.log('| entries | file MB | categorising at load (ms) | rule edit: worker (ms) | rule edit: click → timeline and charts redrawn (ms) | new moment: worker (ms) | new moment: click → charts drawn (ms) | frame by role: input → on screen (worker paint), ms | by component | by allocation |');
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  const loadTarget = r.entries === 6e6 ? targets.categorise6M : r.entries === 1e6 ? targets.categorise1M : Infinity;
  const load = `${ms(r.categorise)}${Number.isFinite(loadTarget) ? ' ' + check(r.categorise <= loadTarget) : ''}`;
  const rule = `${ms(r.recategorise)}${r.entries === 1e6 ? ' ' + check(r.recategorise <= targets.recategorise) : ''}`;
  const frame = (c, judged) => `${ms(r.colourings[c].latency)}${judged ? ' ' + check(r.colourings[c].latency <= targets.frame) : ''} (${ms(r.colourings[c].paint)})`;
  console.log(`| ${r.entries.toLocaleString('en')} | ${mb(r.bytes).toFixed(1)} | ${load} | ${ms(r.recategoriseWorker)} | ${rule} | ${ms(r.momentWorker)} | ${ms(r.moment)} ${check(r.moment <= targets.moment)} | ${frame('role', true)} | ${frame('component', true)} | ${frame('allocation', false)} |`);
}
console.log('\nWorker times come from performance.now() in the worker, which browsers round to 0.1 ms; click → drawn is measured in the page when the last canvas or DOM change lands, as the timeline benchmark times frames.');
