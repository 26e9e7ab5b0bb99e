// End-to-end tests of the source view in Debian's headless Chromium: a snapshot carrying its
// source (`source_code`) opens a call site's file from the table, with the group's bytes in
// the margin of its line and the snapshot's text; a real run's file is found in a folder of
// the user's code opened in the page (read locally, matched by the longest shared end of the
// path, a decoy of the same name left aside), and a file it cannot find is said; two real runs
// compared show A, B and the change at each line, equal to the comparison's call sites.
//
// Run with `./x test` (which builds dist/ first) or `node --test tests/e2e/source.test.mjs`.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';

import { openFiles, REAL_FIXTURES, ROOT, sharedBrowser, waitSettled } from './helpers.mjs';

const FIXTURES = path.join(ROOT, 'tests/fixtures');
const FULL_STEP = 'kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_fullstep_.pickle';
const FORWARD = 'kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_forward_mixed.pickle';
const WAIT = 60_000;
const shared = sharedBrowser();
const real = (name) => path.join(REAL_FIXTURES, name);
const missingReal = [FULL_STEP, FORWARD].filter((n) => !fs.existsSync(real(n)));
const skipReal = missingReal.length ? `${missingReal.join(', ')} not found in ${REAL_FIXTURES}` : false;

/** Groups the table by call site (its answer awaited). */
async function groupByCallSite(page) {
  await page.waitForSelector('#allocations-table[data-ready="true"]', { timeout: WAIT });
  const before = await page.$eval('#allocations-table', (e) => Number(e.dataset.answers));
  await page.selectOption('#table-group-by', 'callsite');
  await page.waitForFunction((b) => Number(document.querySelector('#allocations-table').dataset.answers) > b, before, { timeout: WAIT });
}

/** The table's call-site groups with a place: bytes, count and the place's path and line. */
const placedGroups = (page) => page.$$eval('#allocations-table .tr.group', (rows) => rows
  .filter((g) => g.querySelector('.source-open'))
  .map((g) => {
    const button = g.querySelector('.source-open');
    return {
      path: button.dataset.path,
      line: Number(button.dataset.line),
      bytes: Number(g.dataset.requestedBytes),
      count: Number(g.dataset.count),
      label: g.querySelector('.group-name').title,
    };
  }));

/** Clicks the "code" button of the group whose place is `group`'s; resolves with its line's row. */
async function openGroup(page, group) {
  const buttons = await page.$$('#allocations-table .tr.group .source-open');
  for (const button of buttons) {
    const [p, l] = await button.evaluate((b) => [b.dataset.path, Number(b.dataset.line)]);
    if (p === group.path && l === group.line) {
      await button.click();
      break;
    }
  }
  await page.waitForFunction(({ p, l }) => {
    const view = document.querySelector('#source-view');
    return view?.dataset.path === p && view.querySelector(`#source-listing tr[data-line="${l}"]`);
  }, { p: group.path, l: group.line }, { timeout: WAIT });
}

/** A line's row of the source view: its margins and its code. */
const lineRow = (page, line) => page.$eval(`#source-listing tr[data-line="${line}"]`, (r) => ({
  made: Number(r.dataset.madeBytes),
  madeCount: Number(r.dataset.madeCount),
  through: Number(r.dataset.throughBytes),
  code: r.querySelector('.source-code').textContent,
  target: r.classList.contains('target'),
  heat: [...r.classList].find((c) => c.startsWith('heat-')),
}));

describe('the source view', () => {
  it('a call site of a snapshot carrying its source opens its line with the group\'s bytes', async () => {
    const { page, errors } = await shared.open({ viewport: { width: 1500, height: 1000 } });
    try {
      await openFiles(page, path.join(FIXTURES, 'source_and_shapes.pickle'));
      assert.equal(await waitSettled(page), 'ready');
      await page.click('#table-scope-all');
      await groupByCallSite(page);
      const groups = await placedGroups(page);
      assert.ok(groups.length >= 3, `call sites with a place: ${JSON.stringify(groups)}`);
      // Each call site's line holds exactly its group.
      for (const group of groups) {
        await openGroup(page, group);
        const row = await lineRow(page, group.line);
        assert.equal(row.made, group.bytes, `${group.label}: the margin is the group's bytes`);
        assert.equal(row.madeCount, group.count, `${group.label}: and its count`);
        assert.ok(row.through >= row.made, `${group.label}: through holds made`);
        assert.ok(row.target, `${group.label}: the line opened is marked`);
        assert.notEqual(row.heat, 'heat-0', `${group.label}: a line with memory is highlighted`);
      }
      assert.equal(await page.$eval('#source-view', (e) => e.dataset.text), 'yes');
      // An allocation's row, ungrouped, opens the line that made it too.
      const before = await page.$eval('#allocations-table', (e) => Number(e.dataset.answers));
      await page.selectOption('#table-group-by', '');
      await page.waitForFunction((b) => Number(document.querySelector('#allocations-table').dataset.answers) > b, before, { timeout: WAIT });
      const row = await page.$eval('#allocations-table .tr.row .source-open', (b) => ({
        path: b.dataset.path, line: Number(b.dataset.line), bytes: Number(b.closest('.tr.row').dataset.requestedBytes),
      }));
      await page.click('#allocations-table .tr.row .source-open');
      await page.waitForFunction(({ p, l }) => document.querySelector('#source-view')?.dataset.path === p
        && document.querySelector(`#source-listing tr[data-line="${l}"].target`), { p: row.path, l: row.line }, { timeout: WAIT });
      assert.ok((await lineRow(page, row.line)).made >= row.bytes, 'the line holds the row\'s allocation');
      const from = await page.textContent('#source-text-from');
      assert.match(from, /in the snapshot/);
      // The text is the snapshot's: each line's code is the carried file's line.
      const carried = await page.$$eval('#source-listing tr.source-line', (rows) => rows.slice(0, 5).map((r) => r.querySelector('.source-code').textContent));
      assert.ok(carried.some((c) => c.includes('import torch') || c.includes('from model import')), `the carried text: ${carried}`);
      // A function's total sits above its lines.
      const functions = await page.$$eval('#source-listing tr.source-function', (rows) => rows.map((r) => [r.dataset.function, Number(r.dataset.throughBytes)]));
      assert.ok(functions.length >= 1 && functions.every(([, b]) => b > 0), JSON.stringify(functions));
      // Another scope keeps the text (it is not sent again) and changes the margins.
      const answered = await page.$eval('#source-view', (e) => Number(e.dataset.answers));
      await page.click('#table-scope-peak');
      await page.waitForFunction((b) => Number(document.querySelector('#source-view').dataset.answers) > b, answered, { timeout: WAIT });
      assert.equal(await page.$eval('#source-view', (e) => e.dataset.text), 'yes');
      assert.match(await page.textContent('#source-scope'), /alive at the peak/);
      const still = await page.$$eval('#source-listing tr.source-line', (rows) => rows.slice(0, 5).map((r) => r.querySelector('.source-code').textContent));
      assert.deepEqual(still, carried, 'the same text');
      // The file picker lists every file with memory, and picking one shows it.
      const options = await page.$$eval('#source-file option', (os) => os.map((o) => o.value));
      assert.ok(options.length >= 2, JSON.stringify(options));
      const other = options.find((o) => o !== (groups[0].path));
      await page.selectOption('#source-file', other);
      await page.waitForFunction((p) => document.querySelector('#source-view').dataset.path === p, other, { timeout: WAIT });
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });

  it('a folder of the user\'s code opened in the page gives a real run\'s file its text', { skip: skipReal }, async () => {
    // A checkout elsewhere: the run's file under another root, a decoy of the same name.
    const checkout = fs.mkdtempSync(path.join(os.tmpdir(), 'memsight-source-'));
    const text = Array.from({ length: 200 }, (_, k) => `line ${k + 1} of the optimizer`).join('\n') + '\n';
    fs.mkdirSync(path.join(checkout, 'cs336_basics'));
    fs.mkdirSync(path.join(checkout, 'unrelated'));
    fs.mkdirSync(path.join(checkout, '.venv'));
    fs.writeFileSync(path.join(checkout, 'cs336_basics/optimizers.py'), text);
    fs.writeFileSync(path.join(checkout, 'unrelated/model.py'), 'decoy = True\n');
    fs.writeFileSync(path.join(checkout, '.venv/optimizers.py'), 'hidden = True\n');
    const { page, errors } = await shared.open({ viewport: { width: 1500, height: 1000 } });
    try {
      await openFiles(page, real(FULL_STEP));
      assert.equal(await waitSettled(page), 'ready');
      await groupByCallSite(page);
      // Far below the screen and asked for nothing, the view has cost the worker nothing.
      assert.equal(await page.$eval('#source-view', (e) => e.dataset.answers), '0');
      const groups = (await placedGroups(page)).filter((g) => g.path.endsWith('cs336_basics/optimizers.py'));
      assert.ok(groups.length > 0, 'the optimizer holds memory at the peak');
      const group = groups[0];
      await openGroup(page, group);
      // No text yet: the lines with memory alone, and the file said not found.
      assert.equal(await page.$eval('#source-view', (e) => e.dataset.text), 'no');
      const missing = await page.textContent('#source-missing');
      assert.match(missing, /optimizers\.py/);
      await page.setInputFiles('#source-folder-input', checkout);
      await page.waitForSelector('#source-view[data-text="yes"]', { timeout: WAIT });
      const row = await lineRow(page, group.line);
      assert.equal(row.code, `line ${group.line} of the optimizer`, 'the folder\'s line, not the decoy\'s');
      assert.equal(row.made, group.bytes, 'the margin is the group\'s bytes');
      assert.equal(row.madeCount, group.count);
      assert.match(await page.textContent('#source-text-from'), /cs336_basics\/optimizers\.py \(in the folder opened\)/);
      const counted = await page.$eval('.source-folder-status', (e) => Number(e.dataset.count));
      assert.equal(counted, 2, 'the Python files outside hidden folders');
      // Every one of the file's lines is listed, its text's and no more.
      const rows = await page.$$eval('#source-listing tr.source-line', (rs) => rs.length);
      assert.equal(rows, 200);
      // The table's scope is the view's: at the end the optimizer's state is still alive. The
      // page stays where the user is: the new margins do not pull it to the source view.
      const before = await page.$eval('#source-view', (e) => Number(e.dataset.answers));
      await page.$eval('#table-scope-end', (b) => b.scrollIntoView({ block: 'center' }));
      const scrolled = await page.evaluate(() => window.scrollY);
      await page.click('#table-scope-end');
      await page.waitForFunction((b) => Number(document.querySelector('#source-view').dataset.answers) > b, before, { timeout: WAIT });
      assert.match(await page.textContent('#source-scope'), /alive at the end/);
      await page.waitForTimeout(100);
      assert.equal(await page.evaluate(() => window.scrollY), scrolled, 'the page did not move');
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
      fs.rmSync(checkout, { recursive: true, force: true });
    }
  });

  it('two runs compared show A, B and the change at each line, as the comparison\'s call sites', { skip: skipReal }, async () => {
    const { page, errors } = await shared.open({ viewport: { width: 1500, height: 1000 } });
    try {
      await openFiles(page, [real(FORWARD), real(FULL_STEP)]);
      await page.click('#show-compare');
      await page.selectOption('#compare-a', { index: 0 });
      await page.selectOption('#compare-b', { index: 1 });
      await page.waitForSelector('#compare-view[data-ready="true"]', { timeout: WAIT });
      await page.uncheck('#compare-call-sites input[type="checkbox"]');
      const sites = await page.$$eval('#compare-call-sites .keyed-row', (rows) => rows
        .filter((r) => r.querySelector('.source-open'))
        .map((r) => {
          const b = r.querySelector('.source-open');
          return { key: r.dataset.key, path: b.dataset.path, line: Number(b.dataset.line), a: Number(r.dataset.a), b: Number(r.dataset.b), delta: Number(r.dataset.delta) };
        }));
      assert.ok(sites.length > 0, 'call sites with a place');
      // One in both runs, one that changed.
      const site = sites.find((s) => s.a > 0 && s.b > 0 && s.delta !== 0) ?? sites[0];
      await page.click(`#compare-call-sites .keyed-row[data-key="${site.key}"] .source-open`);
      await page.waitForSelector('#compare-source[data-ready="true"]', { timeout: WAIT });
      const row = await page.$eval(`#compare-source-listing tr[data-line="${site.line}"]`, (r) => ({
        a: Number(r.dataset.aBytes), b: Number(r.dataset.bBytes), delta: Number(r.dataset.deltaBytes),
      }));
      assert.deepEqual(row, { a: site.a, b: site.b, delta: site.delta }, `${site.key}: the line's A, B and change are the call site's`);
      // Every call site of that file in the comparison is its line's.
      const sameFile = sites.filter((s) => s.path === site.path);
      for (const s of sameFile) {
        const r = await page.$eval(`#compare-source-listing tr[data-line="${s.line}"]`, (e) => [Number(e.dataset.aBytes), Number(e.dataset.bBytes)]);
        assert.deepEqual(r, [s.a, s.b], s.key);
      }
      await page.click('#compare-source-close');
      await page.waitForSelector('#compare-source', { state: 'detached' });
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });
});
