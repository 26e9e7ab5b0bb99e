// A job's digests in the page: the built viewer in headless Chromium opens 1,000 digests
// (chosen at once, as a folder of a job's ranks is) and one file of 1,000 digests, timed in
// the page from the file input's `change` until the files table shows every row, with the
// page's renderer process's resident memory sampled meanwhile (its highest, and after).
// Runs alternate (folder, one file, folder…) in one browser; medians are printed as a
// Markdown table.
//
// Usage: node benches/digests_page.mjs DIR FILE [--runs 5]
//   DIR: a folder of digests (one per rank), FILE: the same digests in one file
//   (`bash benches/digests.sh` writes both and runs this when dist/ is built).
// Needs a release build in dist/ (./x build) and Debian's chromium (./x setup test).

import fs from 'node:fs';
import path from 'node:path';

import { launchBrowser, openApp, startServer } from '../tests/e2e/helpers.mjs';
import { launchedBrowserPid, median, openMeasuredApp, option, residentMiB } from './common.mjs';

const [dir, file] = process.argv.slice(2).filter((a) => !a.startsWith('--') && !/^\d+$/.test(a));
if (!dir || !file) {
  console.error('usage: node benches/digests_page.mjs DIR FILE [--runs 5]');
  process.exit(2);
}
const runs = Number(option('--runs', '5'));
const folder = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => path.join(dir, f));
const digests = folder.length;

/** Opens `files` in a fresh page; milliseconds until every digest is listed and its rows are
 *  in the files table (a digest has a row per device), and the page's resident memory at most
 *  and after. */
async function measure(browser, browserPid, server, files) {
  const { page, context, pagePids } = await openMeasuredApp(browser, browserPid, server, openApp);
  try {
    await page.evaluate(() => {
      document.querySelector('#file-input').addEventListener('change', () => {
        window.__changeAt = performance.now();
      }, { capture: true, once: true });
    });
    // The idle page, settled.
    await new Promise((r) => setTimeout(r, 1500));
    const idle = residentMiB(pagePids);
    let highest = idle;
    const sampler = setInterval(() => {
      highest = Math.max(highest, residentMiB(pagePids));
    }, 25);
    await page.setInputFiles('#file-input', files);
    const handle = await page.waitForFunction((n) => {
      const view = document.querySelector('#files-view');
      return document.querySelectorAll('.file-item').length === n && view && Number(view.dataset.rows) >= n && view.dataset.waiting === '0';
    }, digests, { polling: 'raf', timeout: 300_000 });
    await handle.dispose();
    const ms = await page.evaluate(() => performance.now() - window.__changeAt);
    clearInterval(sampler);
    const after = residentMiB(pagePids);
    highest = Math.max(highest, after);
    return { ms, highest, added: highest - idle };
  } finally {
    await context.close();
  }
}

const server = await startServer();
const browser = await launchBrowser();
try {
  const browserPid = launchedBrowserPid();
  const results = { folder: [], file: [] };
  for (let r = 0; r < runs; r++) {
    results.folder.push(await measure(browser, browserPid, server, folder));
    results.file.push(await measure(browser, browserPid, server, [file]));
  }
  const line = (label, xs) => `| ${label} | ${Math.round(median(xs.map((x) => x.ms)))} ms | ${Math.round(median(xs.map((x) => x.highest)))} MiB | ${Math.round(median(xs.map((x) => x.added)))} MiB |`;
  console.log(`| the page (headless Chromium), median of ${runs} | until every row is shown | page memory at most | of which the digests |`);
  console.log('|---|---:|---:|---:|');
  console.log(line(`the files table of ${digests} digests chosen at once`, results.folder));
  console.log(line(`the same from one file of ${digests} digests`, results.file));
} finally {
  await browser.close();
  server.close();
}
