// End-to-end tests of digests (`memsight digest`) in Debian's headless Chromium: a job's
// digests opened together show as the files table at once, with the numbers of the
// snapshots they were written from and of `memsight files`; two compare as `memsight compare`
// compares them; one opened alone shows its report (roles, call sites) with the report to
// download byte for byte as `memsight report` writes it, redacted too, and says the views of
// the trace need the snapshot; a digest of another version is refused, saying so.
//
// Run with `./x test` (which builds dist/ and the command line first) or
// `node --test tests/e2e/digests.test.mjs`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';

import { EXPECTATIONS, openFiles, REAL_FIXTURES, ROOT, sharedBrowser, waitSettled } from './helpers.mjs';

const FORWARD = 'kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_forward_mixed.pickle';
const FULL_STEP = 'kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_fullstep_.pickle';
const SMALL = 'silmont2000__assignment2-systems__mem_snapshot.pickle';
const FOUR_DEVICES = 'LINYUNLinYun__CS336-assignment2-systems__cs336_systems__results__memory_profiles__xl_ctx128_forward_bf16@e1139f5.pickle';
const MEDIUM = 'Wedsonlin__assignment2-systems__results__medium_1024_inference_memory_snapshot.pickle';
const NAMES = [FORWARD, FULL_STEP, SMALL, FOUR_DEVICES, MEDIUM];
const WAIT = 60_000;

const missing = NAMES.filter((n) => !fs.existsSync(path.join(REAL_FIXTURES, n)));
const skip = missing.length ? `${missing.join(', ')} not found in ${REAL_FIXTURES}` : false;
const shared = sharedBrowser();
const expected = skip ? {} : JSON.parse(fs.readFileSync(EXPECTATIONS, 'utf8'));
const expectedFiles = expected.files ?? expected;

/** What `memsight <args…>` prints, run beside the real snapshots so they are named bare. */
function memsight(...args) {
  return execFileSync('cargo', ['run', '-q', '--manifest-path', path.join(ROOT, 'Cargo.toml'), '-p', 'memsight-cli', '--', ...args], {
    cwd: REAL_FIXTURES,
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
}

/** Digests of `names` written to a fresh folder as `rank<i>.digest.json`; their paths, in
 *  `names`' order. */
function digests(...names) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memsight-digests-'));
  return names.map((name, i) => {
    const file = path.join(dir, `rank${i}.digest.json`);
    memsight('digest', name, '-o', file);
    return file;
  });
}

const tableRows = (page) => page.$$eval('#files-table .files-row', (rows) => rows.map((r) => ({
  file: r.dataset.fileId,
  name: r.dataset.name,
  device: Number(r.dataset.device),
  cells: Object.fromEntries([...r.querySelectorAll('td[data-column]')].map((c) => [c.dataset.column, c.dataset.value])),
})));

async function waitRows(page, n) {
  await page.waitForSelector(`#files-view[data-rows="${n}"][data-waiting="0"]`, { timeout: WAIT });
}

describe('digests', { skip }, () => {
  it('a job\'s digests open as the files table at once, with the snapshots\' numbers, and compare as the command line does', async () => {
    const files = digests(FORWARD, FULL_STEP, SMALL);
    for (const file of files) assert.ok(fs.existsSync(file), `${file} was written`);
    const { page, errors } = await shared.open({ viewport: { width: 1500, height: 1000 } });
    try {
      await page.setInputFiles('#file-input', files);
      await waitRows(page, 3);
      const rows = await tableRows(page);
      assert.deepEqual(rows.map((r) => r.name), [FORWARD, FULL_STEP, SMALL]);
      const printed = JSON.parse(memsight('files', ...files, '--json')).files;
      for (const [i, row] of rows.entries()) {
        const exp = expectedFiles[row.name].devices[String(row.device)];
        assert.equal(row.cells.peak_allocated_bytes, String(exp.peak_allocated_bytes), row.name);
        assert.equal(row.cells.peak_reserved_bytes, String(exp.peak_reserved_bytes), row.name);
        assert.equal(row.cells.allocated_end_bytes, String(exp.allocated_bytes), row.name);
        assert.equal(row.cells.trace_entries, String(exp.trace_entries), row.name);
        assert.equal(row.cells.peak_allocated_bytes, String(printed[i].peak_allocated_bytes), row.name);
        for (const [k, role] of ['parameters', 'gradients', 'optimizer_state', 'activations'].entries()) {
          const cell = row.cells[`${role}_at_peak_bytes`];
          if (cell !== undefined) assert.equal(cell, String(printed[i].roles_at_peak[k]), `${row.name} ${role}`);
        }
      }
      // Each is listed as a digest, ready, with no load to wait for.
      const statuses = await page.$$eval('.file-item', (items) => items.map((i) => i.textContent));
      assert.ok(statuses.every((s) => s.includes('Digest, 1 device')), statuses.join(' | '));

      // Two compared: the command line's comparison of the same digests.
      await page.click('#show-compare');
      await page.selectOption('#compare-a', { index: 0 });
      await page.selectOption('#compare-b', { index: 1 });
      await page.waitForSelector('#compare-view[data-ready="true"]', { timeout: WAIT });
      const cli = JSON.parse(memsight('compare', files[0], files[1], '--json')).comparison;
      const peak = await page.$eval('#compare-metrics tr[data-key="peak-allocated-bytes"]', (r) => ({ a: r.dataset.a, b: r.dataset.b }));
      assert.deepEqual(peak, { a: String(expectedFiles[FORWARD].devices['0'].peak_allocated_bytes), b: String(expectedFiles[FULL_STEP].devices['0'].peak_allocated_bytes) });
      const sites = await page.$$eval('#compare-call-sites .keyed-row', (rows) => rows.slice(0, 5).map((r) => [r.dataset.key, r.dataset.change, Number(r.dataset.delta)]));
      const cliSites = cli.call_sites.filter((s) => s.change !== 'same').slice(0, 5).map((s) => [s.key, s.change, s.delta_bytes]);
      assert.ok(sites.length > 0, 'the digests carry their call sites');
      assert.deepEqual(sites, cliSites);

      // A row opens its digest's own view.
      await page.click('#show-files');
      await waitRows(page, 3);
      await page.click(`#files-table .files-row[data-file-id="${rows[1].file}"] .open-file`);
      await page.waitForSelector('#digest-file', { timeout: WAIT });
      assert.equal(await page.textContent('#digest-file .file-title'), FULL_STEP);
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });

  it('a digest shows its report, downloads it as memsight report writes it, and says the trace needs the snapshot', async () => {
    const [medium, fourDevices] = digests(MEDIUM, FOUR_DEVICES);
    const { page, errors } = await shared.open();
    try {
      await openFiles(page, medium);
      assert.equal(await waitSettled(page), 'ready');
      await page.waitForSelector('#digest-file', { timeout: WAIT });
      assert.match(await page.textContent('#digest-note'), /The timeline, the table of allocations and the breakdown need the snapshot itself/);
      assert.equal(await page.locator('#timeline').count(), 0, 'no view of the trace');
      // The roles at the peak: the command line's numbers.
      const printed = JSON.parse(memsight('files', medium, '--json')).files[0];
      const parameters = await page.$eval('#digest-file tr[data-category="parameters"] td[data-bytes]', (c) => Number(c.dataset.bytes));
      assert.equal(parameters, printed.roles_at_peak[0]);
      // The call sites at the peak are listed.
      assert.ok(await page.locator('#digest-file .doc-table').count() >= 3);

      const home = '/home/lin/';
      const [plain] = await Promise.all([page.waitForEvent('download'), page.click('#digest-download-report')]);
      const text = fs.readFileSync(await plain.path(), 'utf8');
      assert.equal(text, memsight('report', medium));
      assert.ok(text.includes(home), 'the snapshot\'s paths are in the digest\'s report by default');
      await page.check('#redact-paths');
      const [redacted] = await Promise.all([page.waitForEvent('download'), page.click('#digest-download-report')]);
      const safe = fs.readFileSync(await redacted.path(), 'utf8');
      assert.ok(!safe.includes(home) && !safe.includes('/lin/'), 'no home folder or user name');
      assert.equal(safe, memsight('--redact', 'report', medium));
      await page.uncheck('#redact-paths');

      // A digest of four devices: the picker shows each device's report.
      await openFiles(page, fourDevices);
      await page.waitForSelector(`#digest-file .file-title:text-is("${FOUR_DEVICES}")`, { timeout: WAIT });
      const options = await page.$$eval('.device-picker option', (os) => os.map((o) => o.value));
      assert.equal(options.length, 4);
      await page.selectOption('.device-picker select', options[1]);
      await page.waitForFunction((d) => document.querySelector('#digest-file h2')?.textContent.endsWith(`cuda:${d}`), options[1], { timeout: WAIT });
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });

  it('a job of 250 ranks lays out the rows in view, sorts and downloads them all', async () => {
    const [small, full] = digests(SMALL, FULL_STEP).map((f) => JSON.parse(fs.readFileSync(f, 'utf8')));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memsight-job-'));
    const ranks = 250;
    const files = [];
    for (let i = 0; i < ranks; i++) {
      // Every 50th rank is the full step: its peak is the largest.
      const digest = { ...(i % 50 === 7 ? full : small), name: `job/iteration_${Math.floor(i / 8)}/rank${i % 8}.pickle` };
      const file = path.join(dir, `iteration_${Math.floor(i / 8)}__rank${i % 8}.digest.json`);
      fs.writeFileSync(file, `${JSON.stringify(digest)}\n`);
      files.push(file);
    }
    const { page, errors } = await shared.open({ viewport: { width: 1500, height: 1000 } });
    try {
      await page.setInputFiles('#file-input', files);
      await waitRows(page, ranks);
      const laidOut = await page.locator('#files-table .files-row').count();
      assert.ok(laidOut > 10 && laidOut < 100, `${laidOut} rows laid out of ${ranks}`);
      // Sorted by the peak, the largest come first, whichever were laid out before.
      await page.click('#files-table th[data-column="peak_allocated_bytes"] .sort-button');
      await page.waitForFunction(() => document.querySelector('#files-table th[data-column="peak_allocated_bytes"]')?.getAttribute('aria-sort') === 'descending');
      const peaks = await page.$$eval('#files-table .files-row td[data-column="peak_allocated_bytes"]', (tds) => tds.slice(0, 6).map((t) => t.dataset.value));
      const fullPeak = String(expectedFiles[FULL_STEP].devices['0'].peak_allocated_bytes);
      assert.deepEqual(peaks.slice(0, 5), Array(5).fill(fullPeak));
      assert.notEqual(peaks[5], fullPeak);
      // Scrolled to its end, the table shows its last rows.
      await page.$eval('.files-table-wrap', (el) => { el.scrollTop = el.scrollHeight; });
      await page.waitForFunction((n) => {
        const rows = [...document.querySelectorAll('#files-table .files-row')];
        return rows.length > 0 && rows.length < 100 && document.querySelector('.files-table-wrap').scrollTop > 0 && rows.at(-1).dataset.name !== undefined && n;
      }, ranks);
      const lastShown = await page.$$eval('#files-table .files-row', (rows) => rows.at(-1).querySelector('td[data-column="peak_allocated_bytes"]').dataset.value);
      assert.equal(lastShown, String(expectedFiles[SMALL].devices['0'].peak_allocated_bytes));
      // The download has every row.
      const [markdown] = await Promise.all([page.waitForEvent('download'), page.click('#files-markdown')]);
      const text = fs.readFileSync(await markdown.path(), 'utf8');
      const tableLines = text.split('\n').filter((l) => l.startsWith('|'));
      assert.equal(tableLines.length, ranks + 2, 'a header, its rule and every row');
      assert.deepEqual(errors, []);
    } finally {
      await page.context().close();
    }
  });

  it('refuses a digest of another version, saying which is newer', async () => {
    const [digest] = digests(SMALL);
    const newer = path.join(path.dirname(digest), 'newer.digest.json');
    fs.writeFileSync(newer, fs.readFileSync(digest, 'utf8').replace('"version":1', '"version":99'));
    const { page } = await shared.open();
    try {
      await openFiles(page, newer);
      assert.equal(await waitSettled(page), 'failed');
      assert.match(await page.textContent('#error-report'), /memsight digest of version 99, newer than this memsight reads \(1\): update memsight/);
    } finally {
      await page.context().close();
    }
  });
});
