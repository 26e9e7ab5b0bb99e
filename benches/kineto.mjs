// Kineto benchmark: a generated torch.profiler Chrome trace with memory events (new argument
// set, Python call stacks, kernel events; tests/python/gen_kineto.py), plain and gzipped, in
// the built viewer in headless Chromium through the file input, timed from the app's marks:
// file → decoded (read, parsed and brought into the model in the worker) and file → first
// paint (the overview on screen), with the worker's own time and the page's memory. Also the
// native import through the command line for the same files.
//
// Usage: node benches/kineto.mjs [--megabytes 100] [--runs 3]
// Needs a release build in dist/ (./x build) and Debian's chromium (./x setup test).

import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { execFileSync } from 'node:child_process';

import { launchBrowser, marks, openApp, openFiles, ROOT, startServer, waitSettled } from '../tests/e2e/helpers.mjs';
import { launchedBrowserPid, median, openMeasuredApp, option, residentMiB } from './common.mjs';

const megabytes = Number(option('--megabytes', '100'));
const runs = Number(option('--runs', '3'));
const target = 3000;

const dir = path.join(ROOT, 'target/bench-data');
fs.mkdirSync(dir, { recursive: true });
const plain = path.join(dir, `kineto-${megabytes}MB.json`);
if (!fs.existsSync(plain)) {
  console.error(`generating ${plain}`);
  execFileSync('python3', [path.join(ROOT, 'tests/python/gen_kineto.py'), '--megabytes', String(megabytes), '-o', plain], { stdio: 'inherit' });
}
const gzipped = `${plain}.gz`;
if (!fs.existsSync(gzipped)) fs.writeFileSync(gzipped, zlib.gzipSync(fs.readFileSync(plain), { level: 6 }));

async function measure(session, file) {
  const { context, page, pagePids } = await openMeasuredApp(session.browser, session.browserPid, session.server, openApp);
  await page.waitForTimeout(1000);
  await openFiles(page, file);
  const status = await waitSettled(page, 600_000);
  if (status !== 'ready') throw new Error(`${file}: ${status}`);
  const [start] = (await marks(page, 'memsight:file-start')).slice(-1);
  const [decoded] = (await marks(page, 'memsight:decoded')).slice(-1);
  const [painted] = (await marks(page, 'memsight:first-paint')).slice(-1);
  const worker = await page.$eval('#snapshot', (e) => Number(e.dataset.decodeMs));
  const memory = residentMiB(pagePids);
  await context.close();
  return { decoded: decoded - start, painted: painted - start, worker, memory };
}

execFileSync('cargo', ['build', '--release', '-q', '-p', 'memsight-cli'], { cwd: ROOT, stdio: 'inherit' });

function native(file) {
  const cli = path.join(ROOT, 'target/release/memsight');
  const start = process.hrtime.bigint();
  execFileSync(cli, ['overview', file], { stdio: 'ignore' });
  return Number(process.hrtime.bigint() - start) / 1e6;
}

const server = await startServer();
const browser = await launchBrowser();
const session = { browser, server, browserPid: launchedBrowserPid() };
const rows = [];
try {
  for (const file of [plain, gzipped]) {
    const results = [];
    for (let r = 0; r < runs; r++) results.push(await measure(session, file));
    const nativeMs = median(Array.from({ length: runs }, () => native(file)));
    const m = (k) => median(results.map((x) => x[k]));
    rows.push({ file: path.basename(file), mib: fs.statSync(file).size / (1 << 20), decoded: m('decoded'), painted: m('painted'), worker: m('worker'), memory: Math.max(...results.map((x) => x.memory)), nativeMs });
    console.error(`${path.basename(file)}: ${results.map((x) => x.painted.toFixed(0)).join(', ')} ms to first paint`);
  }
} finally {
  await browser.close();
  server.close();
}
console.log(`\nmedians of ${runs} runs\n`);
console.log('| file | size | file → decoded | file → overview on screen | in the worker | page memory | native (memsight overview) | target |');
console.log('|---|---:|---:|---:|---:|---:|---:|---|');
for (const r of rows) {
  console.log(`| ${r.file} | ${r.mib.toFixed(1)} MiB | ${r.decoded.toFixed(0)} ms | ${r.painted.toFixed(0)} ms | ${r.worker.toFixed(0)} ms | ${r.memory.toFixed(0)} MiB | ${r.nativeMs.toFixed(0)} ms | ≤ ${target} ms |`);
}
