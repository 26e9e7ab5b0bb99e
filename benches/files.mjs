// Files side by side benchmark: generated rank files (one per seed, 6–10-frame stacks) in the
// built viewer in headless Chromium, timed in the page from the file input's `change`:
//   eight 100k-entry rank files chosen at once (the viewer decodes them in parallel workers,
//     as many at once as the machine has cores) until all eight are in the files table;
//   four of them opened one after another (each chosen once the previous one's overview is
//     on screen) until the fourth's overview is on screen;
//   two 1M-entry files compared: from "Compare two" until the comparison is on screen (both
//     workers make their digests with call sites and modules, the page compares them).
// Runs alternate (parallel, sequential, parallel…) in one browser; medians are reported.
//
// Usage: node benches/files.mjs [--runs 3] [--ranks 8] [--rank-entries 100k] [--compare 1M]
// Needs a release build in dist/ (./x build) and Debian's chromium (./x setup test).

import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

import { launchBrowser, openApp, ROOT, startServer, waitSettled } from '../tests/e2e/helpers.mjs';
import { median, option, parseCount } from './common.mjs';

const runs = Number(option('--runs', '3'));
const ranks = Number(option('--ranks', '8'));
const rankEntries = parseCount(option('--rank-entries', '100k'));
const compareEntries = parseCount(option('--compare', '1M'));
const targets = { compare: 1000 };

/** A generated snapshot of `entries` entries from `seed`, cached in target/bench-data/. */
function generated(entries, seed) {
  const dir = path.join(ROOT, 'target/bench-data');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `browser-${entries}-seed${seed}-depth6-10.pickle`);
  if (!fs.existsSync(file)) {
    console.error(`generating ${entries} entries, seed ${seed} → ${file}`);
    execFileSync('python3', [path.join(ROOT, 'tests/python/gen_snapshot.py'), '--entries', String(entries), '--seed', String(seed),
      '--depth-min', '6', '--depth-max', '10', '--quiet', '-o', file], { stdio: 'inherit' });
  }
  return file;
}

/** Records `performance.now()` at the file input's next `change`, in `window.__changeAt`. */
async function armChange(page) {
  await page.evaluate(() => {
    window.__changeAt = undefined;
    document.querySelector('#file-input').addEventListener('change', () => {
      window.__changeAt = performance.now();
    }, { capture: true, once: true });
  });
}

/** Milliseconds from the armed `change` until `predicate` (run in the page each frame) holds. */
async function until(page, predicate, arg) {
  const handle = await page.waitForFunction(predicate, arg, { polling: 'raf', timeout: 300_000 });
  await handle.dispose();
  return page.evaluate(() => performance.now() - window.__changeAt);
}

async function parallel(browser, server, files) {
  const { page, context } = await openApp(browser, server, { viewport: { width: 1500, height: 1000 } });
  try {
    await armChange(page);
    await page.setInputFiles('#file-input', files);
    return await until(page, (n) => {
      const view = document.querySelector('#files-view');
      return view && view.dataset.rows === String(n) && view.dataset.waiting === '0';
    }, files.length);
  } finally {
    await context.close();
  }
}

async function sequential(browser, server, files) {
  const { page, context } = await openApp(browser, server, { viewport: { width: 1500, height: 1000 } });
  try {
    let start;
    for (const [i, file] of files.entries()) {
      await page.evaluate(() => {
        document.querySelector('#file-input').addEventListener('change', () => {
          window.__changeAt ??= performance.now();
        }, { capture: true, once: true });
      });
      await page.setInputFiles('#file-input', file);
      await page.waitForFunction((n) => document.querySelectorAll('.file-item').length === n, i + 1);
      await waitSettled(page, 300_000);
      start ??= await page.evaluate(() => window.__changeAt);
    }
    return await page.evaluate((t0) => performance.now() - t0, start);
  } finally {
    await context.close();
  }
}

async function comparing(browser, server, files) {
  const { page, context } = await openApp(browser, server, { viewport: { width: 1500, height: 1000 } });
  try {
    await page.setInputFiles('#file-input', files);
    await page.waitForSelector(`#files-view[data-rows="${files.length}"][data-waiting="0"]`, { timeout: 300_000 });
    const start = await page.evaluate(() => performance.now());
    await page.click('#show-compare');
    await page.waitForSelector('#compare-view[data-ready="true"]', { timeout: 300_000 });
    await page.waitForSelector('#compare-curves[data-draws]');
    return (await page.evaluate(() => performance.now())) - start;
  } finally {
    await context.close();
  }
}

const rankFiles = Array.from({ length: ranks }, (_, i) => generated(rankEntries, i + 1));
const compareFiles = [generated(compareEntries, 1), generated(compareEntries, 2)];
const server = await startServer();
const browser = await launchBrowser();
const results = { parallel: [], sequential: [], compare: [] };
try {
  const cores = await (async () => {
    const { page, context } = await openApp(browser, server);
    const n = await page.evaluate(() => navigator.hardwareConcurrency);
    await context.close();
    return n;
  })();
  for (let r = 0; r < runs; r++) {
    results.parallel.push(await parallel(browser, server, rankFiles));
    results.sequential.push(await sequential(browser, server, rankFiles.slice(0, ranks / 2)));
    results.compare.push(await comparing(browser, server, compareFiles));
    console.error(`run ${r + 1}: parallel ${results.parallel.at(-1).toFixed(0)} ms, sequential ${results.sequential.at(-1).toFixed(0)} ms, compare ${results.compare.at(-1).toFixed(0)} ms`);
  }
  const mib = (f) => (fs.statSync(f).size / (1 << 20)).toFixed(1);
  console.log(`\n${cores} cores reported by the browser; medians of ${runs} runs (ms)\n`);
  console.log('| what | files | median | runs | target |');
  console.log('|---|---|---:|---|---|');
  const row = (what, files, xs, target) => console.log(`| ${what} | ${files} | ${median(xs).toFixed(0)} | ${xs.map((x) => x.toFixed(0)).join(', ')} | ${target} |`);
  const seq = median(results.sequential);
  row(`${ranks} rank files chosen at once, all in the files table`, `${ranks} × ${rankEntries / 1e3}k entries (${mib(rankFiles[0])} MiB each)`, results.parallel, `< ${ranks / 2} one after another (${seq.toFixed(0)} ms)`);
  row(`${ranks / 2} opened one after another, each overview on screen`, `${ranks / 2} × ${rankEntries / 1e3}k`, results.sequential, '—');
  row('two files compared, from the click to the comparison', `2 × ${compareEntries / 1e6}M entries (${mib(compareFiles[0])} MiB each)`, results.compare, `≤ ${targets.compare} ms`);
  console.log(`\nparallel / sequential: ${(median(results.parallel) / seq).toFixed(2)}`);
} finally {
  await browser.close();
  server.close();
}
