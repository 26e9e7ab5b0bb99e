// Where a load's milliseconds go, stage by stage, on the page's thread and the worker's: opens
// each file through the file input of a fresh page (as benches/browser.mjs does) while Chromium
// records a performance trace, and reads from it the User Timing marks and measures the page
// and its worker set (the worker's own are visible only in a trace), and how long each thread
// was busy in between. Prints the medians:
//   to the worker          `change` → the worker starts the load (the page's handler, the message)
//   reading and decoding   the worker's "parts decoded", and how much of it the worker was busy
//                          (the rest it waited for the file's bytes)
//   finishing, analysing   the worker's "decoding finished and analysed"
//   first view prepared    the default device's timeline laid out, its band categorised
//   first frame painted    that frame's pixels
//   to the page            the frame painted → the page hears `Loaded` (`memsight:decoded`):
//                          encoding, posting, decoding the message, and how much of it the
//                          page's thread was busy (with the message, or with anything before it)
//   page                   `memsight:decoded` → the timeline's first frame on screen
//                          (`memsight:timeline-painted`), and how much of it the page was busy
// A stage the load did not go through (no first frame sent with the file) is "–".
//
// Usage: node benches/stages.mjs [--cases 100k,1M] [--files A,B] [--runs 5] [--pick-after 3000]
// [--dist DIR]. Needs a release build in dist/ (./x build; --dist traces the site in DIR instead,
// e.g. a copy of another build's dist/) and Debian's chromium (./x setup test). Tracing
// slows the page a little: compare stages with each other here, and totals in browser.mjs.

import fs from 'node:fs';
import path from 'node:path';

import { DIST, launchBrowser, openApp } from '../tests/e2e/helpers.mjs';
import { serveStatic } from '../tests/e2e/server.mjs';
import { generatedCase, median, mb, openFileAndWaitForMark, option, pickAfter } from './common.mjs';

const cases = option('--cases', '100k,1M').split(',').filter(Boolean);
const files = option('--files', '').split(',').filter(Boolean);
const runs = Number(option('--runs', '5'));
const site = option('--dist', DIST);

const inputs = [
  ...cases.map(generatedCase),
  ...files.map((file) => ({ file, label: path.basename(file) })),
];

const WORKER_MEASURES = {
  decoded: 'memsight:worker parts decoded',
  analysed: 'memsight:worker decoding finished and analysed',
  prepared: 'memsight:worker first view prepared',
  painted: 'memsight:worker first frame painted',
};

/** One load's stages (ms) from its trace's events. */
function stages(events) {
  events = events.filter((e) => e.ts !== undefined).sort((a, b) => a.ts - b.ts);
  const isMark = (e) => e.ph === 'I' || e.ph === 'R' || e.ph === 'i';
  const markAfter = (name, from) => events.find((e) => e.name === name && isMark(e) && e.ts >= from);
  // The page's file is the first; the worker's warm-up loads set the same marks and measures,
  // and one may be under way when the file comes: the file's load is the first to start after
  // the file's `change`.
  const start = markAfter('memsight:file-start', -Infinity);
  const loadStart = start && markAfter('memsight:worker-load', start.ts);
  const heard = start && markAfter('memsight:decoded', start.ts);
  const painted = start && markAfter('memsight:timeline-painted', start.ts);
  if (!start || !heard || !painted || !loadStart) return undefined;
  // A worker measure (async begin and end events, named alike) of the file's load, on its
  // worker's thread (the worker the page starts ahead of the next file warms up meanwhile).
  const onLoadThread = (e) => e.pid === loadStart.pid && e.tid === loadStart.tid;
  const measure = (name) => {
    const begin = events.find((e) => e.name === name && e.ph === 'b' && onLoadThread(e) && e.ts >= loadStart.ts);
    const end = begin && events.find((e) => e.name === name && e.ph === 'e' && onLoadThread(e) && e.ts >= begin.ts);
    return begin && end ? { begin: begin.ts, end: end.ts, pid: begin.pid, tid: begin.tid } : undefined;
  };
  const m = Object.fromEntries(Object.entries(WORKER_MEASURES).map(([k, name]) => [k, measure(name)]));
  // Busy time of a thread between two timestamps: its top-level tasks.
  const busy = (pid, tid, from, to) =>
    events
      .filter((e) => e.ph === 'X' && e.name === 'RunTask' && e.pid === pid && e.tid === tid && e.ts < to && e.ts + e.dur > from)
      .reduce((sum, e) => sum + Math.min(e.ts + e.dur, to) - Math.max(e.ts, from), 0) / 1000;
  const ms = (from, to) => (from === undefined || to === undefined ? undefined : (to - from) / 1000);
  const lastWorkerEnd = m.painted?.end ?? m.prepared?.end ?? m.analysed?.end;
  return {
    toWorker: ms(start.ts, loadStart.ts),
    readingDecoding: ms(m.decoded?.begin, m.decoded?.end),
    decodingBusy: m.decoded && busy(m.decoded.pid, m.decoded.tid, m.decoded.begin, m.decoded.end),
    analysed: ms(m.analysed?.begin, m.analysed?.end),
    prepared: ms(m.prepared?.begin, m.prepared?.end),
    framePainted: ms(m.painted?.begin, m.painted?.end),
    toPage: ms(lastWorkerEnd, heard.ts),
    toPageBusy: lastWorkerEnd && busy(start.pid, start.tid, lastWorkerEnd, heard.ts),
    page: ms(heard.ts, painted.ts),
    pageBusy: busy(start.pid, start.tid, heard.ts, painted.ts),
    total: ms(start.ts, painted.ts),
  };
}

const browser = await launchBrowser();
const server = await serveStatic(site, '/memsight/');
const rows = [];
try {
  for (const input of inputs) {
    const results = [];
    for (let r = 0; r < runs; r++) {
      const { context, page } = await openApp(browser, server);
      await page.waitForTimeout(pickAfter());
      await browser.startTracing(page, { categories: ['blink.user_timing', 'disabled-by-default-devtools.timeline'] });
      await openFileAndWaitForMark(page, input.file, 'memsight:timeline-painted', 600_000);
      // The page's last mark is set in an animation frame: let the trace take it in.
      await page.waitForTimeout(200);
      const trace = JSON.parse((await browser.stopTracing()).toString());
      await context.close();
      const result = stages(trace.traceEvents ?? trace);
      if (result) results.push(result);
      else console.error(`${input.label}: run ${r + 1} left no complete trace of its load`);
    }
    rows.push({ ...input, bytes: fs.statSync(input.file).size, results });
    console.error(`${input.label}: ${results.length} run(s) traced`);
  }
} finally {
  await browser.close();
  server.close();
}

const cell = (results, f) => {
  const values = results.map(f).filter((v) => v !== undefined);
  return values.length ? median(values).toFixed(1) : '–';
};
console.log(`Stages of a load, from Chromium performance traces: ${runs} run(s) per file, medians (ms).\n`);
console.log('| file | MB | to the worker | reading and decoding (worker busy) | finishing, analysing | first view prepared | first frame painted | to the page (page busy) | page (busy) | file → first timeline frame |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const { label, bytes, results } of rows) {
  const c = (f) => cell(results, f);
  console.log(`| ${label} | ${mb(bytes).toFixed(1)} | ${c((x) => x.toWorker)} | ${c((x) => x.readingDecoding)} (${c((x) => x.decodingBusy)}) | ${c((x) => x.analysed)} | ${c((x) => x.prepared)} | ${c((x) => x.framePainted)} | ${c((x) => x.toPage)} (${c((x) => x.toPageBusy)}) | ${c((x) => x.page)} (${c((x) => x.pageBusy)}) | ${c((x) => x.total)} |`);
}
