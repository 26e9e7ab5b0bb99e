// Browser benchmark: loads generated snapshots into the built viewer in headless Chromium
// through the file input, exactly as a user does, and prints a table of
//   file → decoded, file → first paint and file → first timeline frame (from the app's performance marks),
//   the decoder's throughput inside the page's worker (wasm),
//   the memory of the page (resident memory of the renderer process that hosts the page and its
//   workers; Chromium's own UI renderer and blank start page are not counted),
//   the release bundle size (wasm + JS, gzipped).
//
// Usage: node benches/browser.mjs [--sizes 100k,1M,3M,6M] [--runs 3] [--depth 30-40] [--files A,B]
// (--sizes '' measures only the --files)
// --depth sets the frames per traceback of the generated files: 30-40 (default) is a deep,
// realistic stack (about 164 bytes per trace entry); 6-10 gives about 94 bytes per entry, close
// to the file sizes pytorch.org/memory_viz was timed on (79 MB for 1M entries).
// Needs a release build in dist/ (./x build) and Debian's chromium (./x setup test).
// Generated files are cached in target/bench-data/ (same generator as the native benchmark).

import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

import { DIST, marks, openApp, openFiles, waitSettled } from '../tests/e2e/helpers.mjs';
import { mb, measureSizes, median, option, parseCount, openMeasuredApp, residentMiB } from './common.mjs';

const sizes = option('--sizes', '100k,1M,3M,6M').split(',').filter(Boolean).map(parseCount);
// Given files measured after the generated ones (the real fixtures, for instance).
const files = option('--files', '').split(',').filter(Boolean);
const runs = Number(option('--runs', '3'));
const [depthMin, depthMax] = option('--depth', '30-40').split('-').map(Number);

const targets = {
  overview1M: 1000, // ms, file → overview for 1M entries
  overview6M: 5000, // ms for 6M entries
  memory6M: 1024, // MiB of page memory at 6M
  bundle: 1.5 * 1024 * 1024, // gzipped bytes
};

function bundleBytes() {
  let raw = 0;
  let gz = 0;
  for (const f of fs.readdirSync(DIST).filter((f) => f.endsWith('.wasm') || f.endsWith('.js'))) {
    const bytes = fs.readFileSync(path.join(DIST, f));
    raw += bytes.length;
    gz += zlib.gzipSync(bytes, { level: 9 }).length;
  }
  return { raw, gz };
}

async function measure({ browser, server, browserPid }, file) {
  const { context, page, pagePids } = await openMeasuredApp(browser, browserPid, server, openApp);
  // A fresh context has its own renderer: measure memory relative to the idle page.
  // A person takes a moment to pick a file; the page uses it to start a worker ahead of need.
  await page.waitForTimeout(1000);
  const idle = residentMiB(pagePids);
  await openFiles(page, file);
  const status = await waitSettled(page, 600_000);
  if (status !== 'ready') throw new Error(`${file}: ${status}`);
  const [start] = (await marks(page, 'memsight:file-start')).slice(-1);
  const [decoded] = (await marks(page, 'memsight:decoded')).slice(-1);
  const [painted] = (await marks(page, 'memsight:first-paint')).slice(-1);
  // The timeline's first frame on screen: what a user waits for.
  await page.waitForFunction(() => performance.getEntriesByName('memsight:timeline-painted').length > 0, null, { timeout: 600_000 });
  const [timeline] = (await marks(page, 'memsight:timeline-painted')).slice(-1);
  const memory = residentMiB(pagePids);
  // The worker's own breakdown: waiting for file bytes, and deriving facts.
  const worker = await page.$eval('#snapshot', (e) => ({
    read: Number(e.dataset.readMs),
    analyse: Number(e.dataset.analyseMs),
    total: Number(e.dataset.decodeMs),
  }));
  await context.close();
  return { decoded: decoded - start, painted: painted - start, timeline: timeline - start, memory, idle, worker };
}

const rows = await measureSizes({ sizes, runs, depthMin, depthMax, files }, measure, ({ entries, bytes, results }) => {
  const decoded = median(results.map((x) => x.decoded));
  const painted = median(results.map((x) => x.painted));
  const timeline = median(results.map((x) => x.timeline));
  const memory = Math.max(...results.map((x) => x.memory));
  const added = Math.max(...results.map((x) => x.memory - x.idle));
  const read = median(results.map((x) => x.worker.read));
  const analyse = median(results.map((x) => x.worker.analyse));
  const inWorker = median(results.map((x) => x.worker.total));
  console.error(`${entries}: decoded ${decoded.toFixed(0)} ms, painted ${painted.toFixed(0)} ms, timeline ${timeline.toFixed(0)} ms, ${memory.toFixed(0)} MiB`);
  return { entries, bytes, decoded, painted, timeline, memory, added, read, analyse, inWorker, throughput: mb(bytes) / (decoded / 1000) };
});

const bundle = bundleBytes();
const check = (ok) => (ok ? '✓' : '✗');
console.log(`Browser benchmark: ${runs} run(s) per size, medians, ${depthMin}–${depthMax} frames per traceback; headless Chromium.`);
console.log(`Targets: 1M entries → overview ≤ ${targets.overview1M} ms; 6M ≤ ${targets.overview6M} ms and ≤ ${targets.memory6M} MiB; bundle ≤ 1.5 MiB gzipped.\n`);
console.log('| entries | file MB | file → decoded (ms) | read + decode (MB/s) | in the worker: reading / decoding / analysis (ms) | file → first paint (ms) | file → first timeline frame (ms) | page memory (MiB) | of which the snapshot (MiB) |');
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  // Targets are set for 1M and 6M entries only.
  const paintTarget = r.entries === 6e6 ? targets.overview6M : r.entries === 1e6 ? targets.overview1M : Infinity;
  const paint = `${r.painted.toFixed(0)}${Number.isFinite(paintTarget) ? ' ' + check(r.painted <= paintTarget) : ''}`;
  const memory = `${r.memory.toFixed(0)}${r.entries === 6e6 ? ' ' + check(r.memory <= targets.memory6M) : ''}`;
  const throughput = r.throughput.toFixed(0);
  console.log(`| ${r.entries.toLocaleString('en')} | ${mb(r.bytes).toFixed(1)} | ${r.decoded.toFixed(0)} | ${throughput} | ${r.read.toFixed(0)} / ${(r.inWorker - r.read - r.analyse).toFixed(0)} / ${r.analyse.toFixed(0)} | ${paint} | ${r.timeline.toFixed(0)} | ${memory} | ${r.added.toFixed(0)} |`);
}
console.log(`\nRelease bundle (dist/*.wasm + *.js): ${(bundle.raw / 1024).toFixed(0)} KiB, ${(bundle.gz / 1024).toFixed(0)} KiB gzipped ${check(bundle.gz <= targets.bundle)}`);
