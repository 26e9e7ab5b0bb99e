// End-to-end tests of categories on a real training step (dist/) in Debian's headless
// Chromium: the timeline coloured by role paints only the legend's colours, the legend and the
// charts' legends hold the command line's numbers (the same core), a rule edited in the page
// moves bytes in the pie and repaints the timeline, a chart downloads as PNG and the Markdown
// report holds the largest allocation with its call site; the views are linked (a category
// picked on a chart or legend narrows the lists and shows on the timeline, an allocation of a
// list or a finding is pinned on the timeline, a click on the run's chart picks its moment) and
// every canvas follows the system's theme while the page is open.
//
// Run with `./x test` (which builds dist/ and the command line first) or
// `node --test tests/e2e/categories.test.mjs`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

import { clickSeries, openFiles, REAL_FIXTURES, ROOT, sharedBrowser, waitSettled } from './helpers.mjs';

/** A CS336 full training step (fp32, AdamW, recorded with C++ stacks). */
const FULL_STEP = 'kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_fullstep_.pickle';
const FILE = path.join(REAL_FIXTURES, FULL_STEP);
/** A small run whose largest allocation (a 2 GB input tensor) has a call site. */
const PROFILE_GRAD = path.join(REAL_FIXTURES, 'shreyansh26__MLSys-Experiments__model_memory_usage__profile_grad.pkl');
const WAIT = 30_000;
/** Light theme colours of the worker's pixels: background and reserved line. */
const BACKGROUND = '255,255,255';
const LINE = '30,30,30';

const skip = fs.existsSync(FILE) ? false : `${FULL_STEP} not found in ${REAL_FIXTURES}`;
const shared = sharedBrowser();

/** What the command line says of the file at the peak: per device, bytes by role and component. */
function cliCategories(...rulesArgs) {
  const json = execFileSync('cargo', ['run', '-q', '-p', 'memsight-cli', '--', 'categories', FILE, '--json', ...rulesArgs], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  return JSON.parse(json).devices['0'];
}

const framesPainted = (page) => page.$eval('#timeline', (e) => Number(e.dataset.framesPainted || 0));

async function settle(page, quiet = 250) {
  let last = await framesPainted(page);
  for (let i = 0; i < 60; i++) {
    await page.waitForTimeout(quiet);
    const now = await framesPainted(page);
    if (now === last) return;
    last = now;
  }
}

async function open(file = FILE) {
  const app = await shared.open({ viewport: { width: 1400, height: 900 } });
  await openFiles(app.page, file);
  assert.equal(await waitSettled(app.page), 'ready');
  await app.page.waitForSelector('#timeline[data-ready="true"]', { timeout: WAIT });
  await app.page.waitForSelector('#timeline-legend[data-state]', { timeout: WAIT });
  await app.page.waitForSelector('#legend-roles', { timeout: WAIT });
  await settle(app.page);
  return app;
}

/** Colour counts of the plot canvas' pixels. */
const scan = (page) => page.$eval('#timeline-canvas', (canvas) => {
  const { width: W, height: H } = canvas;
  const data = canvas.getContext('2d').getImageData(0, 0, W, H).data;
  const colours = {};
  for (let i = 0; i < data.length; i += 4) {
    const key = `${data[i]},${data[i + 1]},${data[i + 2]}`;
    colours[key] = (colours[key] || 0) + 1;
  }
  return colours;
});

/** `data-category` → `data-value` of a legend's items. */
const legendValues = (page, selector) => page.$$eval(`${selector} [data-category]`, (items) =>
  Object.fromEntries(items.map((i) => [i.dataset.category, Number(i.dataset.value)])));

/** The legend swatches' colours as "r,g,b". */
const legendColours = (page) => page.$$eval('#timeline-legend .swatch', (swatches) =>
  swatches.map((s) => getComputedStyle(s).backgroundColor.match(/\d+/g).slice(0, 3).join(',')));

describe('categories of a training step', { skip }, () => {
  it('colours the timeline by role in the legend\'s colours only, with the core\'s numbers', async () => {
    const { context, page, errors } = await open();
    try {
      assert.equal(await page.$eval('#timeline', (e) => e.dataset.colourBy), 'role', 'role is the default');
      const allowed = new Set([BACKGROUND, LINE, ...(await legendColours(page))]);
      const colours = await scan(page);
      const outside = Object.entries(colours).filter(([c]) => !allowed.has(c));
      assert.deepEqual(outside, [], 'every pixel is the background, the line or a legend colour');
      const roles = Object.keys(colours).filter((c) => c !== BACKGROUND && c !== LINE);
      assert.ok(roles.length >= 4, `only ${roles.length} role colours painted`);

      // At the peak (nothing hovered or picked), the legends hold what the command line prints.
      const cli = cliCategories();
      const legend = await legendValues(page, '#timeline-legend');
      assert.deepEqual(legend, cli.roles);
      assert.deepEqual(await legendValues(page, '#legend-roles'), cli.roles);
      assert.deepEqual(await legendValues(page, '#legend-components'), cli.components);
      assert.equal(Number(await page.$eval('#timeline-legend', (e) => e.dataset.liveBytes)), cli.live_bytes);
      assert.equal(Number(await page.$eval('#breakdown-moment', (e) => e.dataset.liveBytes)), cli.live_bytes);
      // The call sites holding the most at the peak are the command line's report's.
      const report = JSON.parse(execFileSync('cargo', ['run', '-q', '-p', 'memsight-cli', '--', 'report', FILE, '--json'], { cwd: ROOT, encoding: 'utf8' }));
      const sites = await page.$$eval('#moment-call-sites tbody tr', (rows) => rows.map((r) => ({
        bytes: Number(r.dataset.bytes), count: Number(r.dataset.count), name: r.querySelector('.frame').textContent,
      })));
      assert.deepEqual(sites, report.devices['0'].peak.call_sites.slice(0, 10).map((c) => ({ bytes: c.bytes, count: c.count, name: c.name ?? '(no stack)' })));

      // By component: the legend follows, and so do the pixels.
      await page.click('#timeline-colour-component');
      await page.waitForSelector('#timeline-legend[data-dimension="component"]');
      await page.waitForFunction(() => document.querySelectorAll('#timeline-legend [data-category]').length === 8);
      await settle(page);
      assert.deepEqual(await legendValues(page, '#timeline-legend'), cli.components);
      const componentColours = new Set([BACKGROUND, LINE, ...(await legendColours(page))]);
      const stray = Object.keys(await scan(page)).filter((c) => !componentColours.has(c));
      assert.deepEqual(stray, [], 'every pixel is a component colour');

      // A click on a category highlights it: the other categories fade.
      await page.click('#timeline-colour-role');
      await page.waitForSelector('#timeline-legend[data-dimension="role"]');
      await settle(page);
      const before = await scan(page);
      await page.click('#timeline-legend [data-category="activations"]');
      await settle(page);
      const after = await scan(page);
      assert.notDeepEqual(after, before, 'the highlight repaints the timeline');
      assert.equal(await page.getAttribute('#timeline-legend [data-category="activations"]', 'aria-pressed'), 'true');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('draws a chart once it comes near the screen, and a PNG of one not yet drawn is drawn first', async () => {
    const { context, page, errors } = await open();
    try {
      // The last charts of the breakdown are far below the timeline: not drawn yet.
      const far = '#chart-cached-free';
      await page.waitForSelector(far, { state: 'attached', timeout: WAIT });
      assert.ok(await page.$eval(far, (e) => e.getBoundingClientRect().top > 2 * window.innerHeight), 'the chart is far below the screen');
      assert.equal(await page.$eval(far, (e) => e.dataset.draws), '0');
      const [png] = await Promise.all([page.waitForEvent('download'), page.$eval(`${far} .chart-png`, (b) => b.click())]);
      assert.ok(fs.statSync(await png.path()).size > 2000, 'the PNG holds a drawn chart');
      assert.equal(await page.$eval(far, (e) => e.dataset.draws), '1');
      // Another one, scrolled to, is drawn then.
      const gauge = '#chart-efficiency';
      assert.equal(await page.$eval(gauge, (e) => e.dataset.draws), '0');
      await page.$eval(gauge, (e) => e.scrollIntoView({ block: 'center' }));
      await page.waitForFunction((s) => Number(document.querySelector(s).dataset.draws) > 0, gauge, { timeout: WAIT });
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('moves bytes in the pie and repaints the timeline when a rule is added, and refuses a bad one', async () => {
    const { context, page, errors } = await open();
    try {
      const before = await legendValues(page, '#legend-roles');
      const pixelsBefore = await scan(page);
      const generation = await page.$eval('#breakdown', (e) => e.dataset.generation);
      await page.click('#rule-add');
      await page.fill('.rule[data-rule="0"] .rule-pattern', 'optim');
      await page.press('.rule[data-rule="0"] .rule-pattern', 'Tab');
      await page.selectOption('.rule[data-rule="0"] .rule-role', 'workspace');
      await page.click('#rules-apply');
      await page.waitForFunction((g) => document.querySelector('#breakdown').dataset.generation !== g, generation, { timeout: WAIT });
      await page.waitForFunction(
        () => document.querySelector('#legend-roles [data-category="optimizer_state"]')?.dataset.value === '0',
        null,
        { timeout: WAIT },
      );
      await settle(page);
      const after = await legendValues(page, '#legend-roles');
      assert.ok(before.optimizer_state > 0, 'AdamW keeps state at the peak');
      assert.ok(after.workspace >= before.workspace + before.optimizer_state, 'the state became workspace');
      const sum = (o) => Object.values(o).reduce((a, b) => a + b, 0);
      assert.equal(sum(after), sum(before), 'the pie still adds up to the live bytes');
      // The command line with the same rule says the same.
      const rules = path.join(fs.mkdtempSync('/tmp/memsight-rules-'), 'rules.json');
      fs.writeFileSync(rules, JSON.stringify({ rules: [{ pattern: 'optim', role: 'workspace' }] }));
      assert.deepEqual(after, cliCategories('--rules', rules).roles);
      assert.notDeepEqual(await scan(page), pixelsBefore, 'the timeline was repainted in the new roles');
      // Kept in this browser.
      const stored = await page.evaluate(() => JSON.parse(localStorage.getItem('memsight:rules')));
      assert.equal(stored.rules[0].pattern, 'optim');

      // An invalid regex is refused by position; the pie keeps its numbers.
      await page.click('#rule-add');
      await page.fill('.rule[data-rule="1"] .rule-pattern', '(');
      await page.press('.rule[data-rule="1"] .rule-pattern', 'Tab');
      await page.check('.rule[data-rule="1"] .rule-regex');
      await page.selectOption('.rule[data-rule="1"] .rule-role', 'inputs');
      await page.click('#rules-apply');
      await page.waitForSelector('.rule[data-rule="1"].refused .rule-error', { timeout: WAIT });
      assert.deepEqual(await legendValues(page, '#legend-roles'), after);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('links the views: categories narrow the lists, allocations pin on the timeline, the theme follows the system', async () => {
    const { context, page, errors } = await open();
    try {
      const peakState = await page.$eval('#breakdown-moment', (e) => e.dataset.state);
      const roles = await legendValues(page, '#legend-roles');

      // A role picked in the chart's legend narrows the lists to it and highlights it on the timeline.
      await page.click('#legend-roles [data-category="activations"] button');
      await page.waitForSelector('#breakdown-moment[data-only="activations"]', { timeout: WAIT });
      assert.equal(await page.getAttribute('#timeline-legend [data-category="activations"]', 'aria-pressed'), 'true');
      const narrowed = await page.$$eval('#top-allocations tbody tr', (rows) => rows.map((r) => ({ role: r.dataset.role, size: Number(r.dataset.size) })));
      assert.ok(narrowed.length > 0, 'activations are live at the peak');
      assert.deepEqual([...new Set(narrowed.map((r) => r.role))], ['activations']);
      assert.ok(narrowed.reduce((a, r) => a + r.size, 0) <= roles.activations, 'the listed activations fit in their total');
      assert.deepEqual(await legendValues(page, '#legend-roles'), roles, 'the pie still counts every role');
      const sited = await page.$$eval('#moment-call-sites tbody tr', (rows) => rows.reduce((a, r) => a + Number(r.dataset.bytes), 0));
      assert.ok(sited > 0 && sited <= roles.activations, 'the call sites count activations only');
      // The command line narrows the same way.
      const narrowedCli = JSON.parse(execFileSync('cargo', ['run', '-q', '-p', 'memsight-cli', '--', 'report', FILE, '--json', '--only', 'role:activations'], { cwd: ROOT, encoding: 'utf8' }));
      const listed = await page.$$eval('#top-allocations tbody tr', (rows) => rows.map((r) => ({ index: Number(r.dataset.index), size: Number(r.dataset.size) })));
      assert.deepEqual(listed, narrowedCli.devices['0'].peak.largest.slice(0, listed.length).map((a) => ({ index: a.index, size: a.size })));
      assert.equal(await page.$eval('#breakdown-moment', (e) => e.dataset.state), peakState);
      // A second click shows every category again.
      await page.click('#legend-roles [data-category="activations"] button');
      await page.waitForSelector('#breakdown-moment[data-only=""]', { timeout: WAIT });
      assert.equal(await page.getAttribute('#timeline-legend [data-category="activations"]', 'aria-pressed'), 'false');

      // A click on the component pie picks the slice its tooltip names, and the timeline is
      // coloured by component to show it.
      const pie = await page.$eval('#chart-components canvas', (c) => {
        c.scrollIntoView({ block: 'center' });
        const r = c.getBoundingClientRect();
        return { x: r.x, y: r.y, w: r.width, h: r.height };
      });
      let target = null;
      for (let fx = 0.1; fx < 0.9 && !target; fx += 0.05) {
        for (let fy = 0.2; fy < 0.9 && !target; fy += 0.1) {
          await page.mouse.move(pie.x + pie.w * fx, pie.y + pie.h * fy);
          const tip = await page.$eval('#chart-components', (e) => e.querySelector('.chart-tooltip')?.textContent ?? null);
          if (tip) target = { x: pie.x + pie.w * fx, y: pie.y + pie.h * fy, label: tip.split(':')[0] };
        }
      }
      assert.ok(target, 'some point of the pie names a slice');
      await page.mouse.click(target.x, target.y);
      await page.waitForSelector('#breakdown-moment:not([data-only=""])', { timeout: WAIT });
      const only = await page.$eval('#breakdown-moment', (e) => e.dataset.only);
      const label = await page.$eval(`#legend-components [data-category="${only}"] .legend-label`, (e) => e.textContent);
      assert.equal(label, target.label, 'the slice clicked is the one the tooltip named');
      await page.waitForSelector('#timeline[data-colour-by="component"]', { timeout: WAIT });
      assert.equal(await page.getAttribute(`#timeline-legend [data-category="${only}"]`, 'aria-pressed'), 'true');
      await page.click('#breakdown-only button');
      await page.waitForSelector('#breakdown-moment[data-only=""]', { timeout: WAIT });

      // One of the largest allocations, clicked in the table, is pinned on the timeline.
      const row = await page.$eval('#top-allocations tbody tr:nth-child(2)', (r) => ({ index: r.dataset.index, size: r.dataset.size }));
      await page.click('#top-allocations tbody tr:nth-child(2) button');
      await page.waitForFunction((i) => document.querySelector('#timeline').dataset.pinned === i, row.index, { timeout: WAIT });

      // So is an allocation behind a finding.
      const finding = await page.$('.finding:not([data-allocations="0"])');
      assert.ok(finding, 'the run has a finding with allocations behind it');
      await finding.$eval('summary', (s) => s.click());
      const behind = await finding.$eval('.finding-allocations li:first-child', (li) => li.dataset.index);
      await finding.$eval('.finding-allocations li:first-child button', (b) => b.click());
      await page.waitForFunction((i) => document.querySelector('#timeline').dataset.pinned === i, behind, { timeout: WAIT });

      // A click on the run's stacked area shows the moment under it.
      await clickSeries(page);
      await page.waitForSelector('#breakdown-at-picked[aria-pressed="true"]', { timeout: WAIT });
      await page.waitForFunction((s) => document.querySelector('#breakdown-moment')?.dataset.state !== s, peakState, { timeout: WAIT });

      // The system turns dark: charts and timeline repaint in the dark theme without a reload.
      await page.$eval('#chart-roles', (e) => e.scrollIntoView({ block: 'center' }));
      await page.waitForFunction(() => Number(document.querySelector('#chart-roles').dataset.draws) > 0, null, { timeout: WAIT });
      await settle(page);
      const draws = Number(await page.$eval('#chart-roles', (e) => e.dataset.draws));
      assert.ok((await scan(page))[BACKGROUND] > 0, 'a light background first');
      await page.emulateMedia({ colorScheme: 'dark' });
      await page.waitForFunction((d) => Number(document.querySelector('#chart-roles').dataset.draws) > d, draws, { timeout: WAIT });
      await settle(page);
      assert.equal((await scan(page))[BACKGROUND] ?? 0, 0, 'no light background left on the timeline');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('downloads a chart as PNG and a Markdown report naming the largest allocation', { skip: !fs.existsSync(PROFILE_GRAD) && 'profile_grad.pkl not found' }, async () => {
    const { context, page, errors } = await open(PROFILE_GRAD);
    try {
      const [png] = await Promise.all([page.waitForEvent('download'), page.click('#chart-roles .chart-png')]);
      assert.match(png.suggestedFilename(), /\.png$/);
      const bytes = fs.readFileSync(await png.path());
      assert.deepEqual([...bytes.subarray(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10], 'a PNG file');

      const rows = await page.$$eval('#top-allocations tbody tr', (trs) => trs.map((row) => ({
        size: Number(row.dataset.size),
        site: row.querySelector('.frame').textContent,
      })));
      const largest = rows[0];
      const named = rows[0];
      assert.notEqual(named.site, '(no stack)', 'the largest allocation has a call site');
      const [report] = await Promise.all([page.waitForEvent('download'), page.click('#breakdown-report')]);
      assert.match(report.suggestedFilename(), /\.md$/);
      const text = fs.readFileSync(await report.path(), 'utf8');
      assert.match(text, /^# Memory report: /);
      assert.ok(text.includes(largest.size.toLocaleString('en-US')), 'the largest size');
      const row = text.split('\n').find((line) => line.includes(named.site));
      assert.ok(row, `the call site ${named.site}`);
      assert.ok(row.includes(named.size.toLocaleString('en-US')), 'its size on its row');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });
});
