// Shared by the browser benchmarks: command-line options, generated snapshot files (cached
// in target/bench-data/), the renderer processes' memory, medians.

import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

import { launchBrowser, ROOT, startServer } from '../tests/e2e/helpers.mjs';

const args = process.argv.slice(2);
export const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
/**
 * Milliseconds between the page being ready (its service worker in control) and the file's
 * `change` (`--pick-after MS`): a person takes a moment to pick a file; 0 is a file dropped on a
 * page just opened. 3 s by default, the pause after the page opened with which
 * pytorch.org/memory_viz was timed for the targets (a second after it opened, the page may still
 * be rehearsing a first load and its spare worker warming up, on the same two cores as the
 * file's load).
 */
export const pickAfter = () => Number(option('--pick-after', '3000'));
export const parseCount = (text) => {
  const m = /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(text.trim());
  if (!m) throw new Error(`bad size ${text}`);
  return Math.round(Number(m[1]) * ({ k: 1e3, K: 1e3, m: 1e6, M: 1e6 }[m[2]] ?? 1));
};

/** A generated snapshot of `entries` trace entries with `depthMin`–`depthMax` frames per traceback. */
export function dataFile(entries, depthMin, depthMax) {
  const depthTag = depthMin === 30 && depthMax === 40 ? '' : `-depth${depthMin}-${depthMax}`;
  const dir = path.join(ROOT, 'target/bench-data');
  fs.mkdirSync(dir, { recursive: true });
  const cached = depthTag
    ? undefined
    : fs.readdirSync(dir).find((f) => f.startsWith(`snapshot-${entries}-seed1-`) && f.endsWith('.pickle'));
  if (cached) return path.join(dir, cached);
  const file = path.join(dir, `browser-${entries}-seed1${depthTag}.pickle`);
  if (fs.existsSync(file)) return file;
  console.error(`generating ${entries} entries → ${file}`);
  const depth = ['--depth-min', String(depthMin), '--depth-max', String(depthMax)];
  execFileSync('python3', [path.join(ROOT, 'tests/python/gen_snapshot.py'), '--entries', String(entries), '--seed', '1', ...depth, '-o', file], {
    stdio: 'inherit',
  });
  return file;
}

/**
 * A generated case of the browser benchmarks, `1M` or `1M@30-40` (trace entries, then frames
 * per traceback, 6–10 unless given): its entries, depths, file (generated when missing) and
 * label.
 */
export function generatedCase(text) {
  const [count, depth = '6-10'] = text.split('@');
  const [depthMin, depthMax] = depth.split('-').map(Number);
  const entries = parseCount(count);
  const file = dataFile(entries, depthMin, depthMax);
  const label = `${entries.toLocaleString('en')} entries${depthMin >= 30 ? `, ${depthMin}–${depthMax}-frame stacks` : ''}`;
  return { entries, depthMin, depthMax, file, label };
}

/** Parent process id of `pid`, or 0. */
function parentOf(pid) {
  try {
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return 0;
  }
}

/** The process of the browser this Node.js process launched (its chromium child), or 0. */
export function launchedBrowserPid() {
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (cmdline.includes('chromium') && !cmdline.includes('--type=') && parentOf(pid) === process.pid) return Number(pid);
    } catch {
      // The process ended while we looked.
    }
  }
  return 0;
}

/** Renderer processes of the browser whose process is `browserPid` (other browsers on the machine are ignored). */
export function rendererPids(browserPid) {
  const pids = [];
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmdline.includes('chromium') || !cmdline.includes('--type=renderer')) continue;
      let ancestor = Number(pid);
      while (ancestor > 1 && ancestor !== browserPid) ancestor = parentOf(ancestor);
      if (ancestor === browserPid) pids.push(Number(pid));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}

/** Resident memory (MiB) of processes `pids`. */
export function residentMiB(pids) {
  let kib = 0;
  for (const pid of pids) {
    try {
      const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
      kib += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    } catch {
      // The process ended.
    }
  }
  return kib / 1024;
}

/** Whether process `pid` runs a Web Worker (a thread Chromium names "DedicatedWorker…"). */
function hostsWorker(pid) {
  try {
    return fs
      .readdirSync(`/proc/${pid}/task`)
      .some((t) => fs.readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').startsWith('DedicatedWorker'));
  } catch {
    return false;
  }
}

/**
 * Opens the app in a fresh browser context and returns it with the renderer process that hosts
 * the page and its workers: the one running a Web Worker (the app starts one at once). Chromium's
 * own processes (its UI renderer, a spare renderer) are not the page and are not counted.
 */
export async function openMeasuredApp(browser, browserPid, server, openApp) {
  const app = await openApp(browser, server);
  for (let i = 0; i < 100; i++) {
    const pagePids = rendererPids(browserPid).filter(hostsWorker);
    if (pagePids.length > 0) return { ...app, pagePids };
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('no renderer process runs the page\'s worker');
}

/**
 * Opens `file` through the file input and waits until the page marks `mark` (a User Timing
 * mark), without running any script in the page meanwhile. Playwright's waiting helpers poll
 * by evaluating its own injected script in the page, which costs the page's main thread 10–30
 * ms (parsing and compiling it) in the middle of a small file's load: that script is loaded
 * before the file is opened here, and the wait is one promise the page resolves. Returns the
 * page's `performance.now()` when the observer heard of the mark: the observer is told in a
 * task of its own, so after the task that set the mark (for a mark set in an animation frame,
 * after that frame's layout and paint). Throws after `timeout` ms.
 */
export async function openFileAndWaitForMark(page, file, mark, timeout) {
  await page.waitForFunction(() => true);
  await page.locator('#file-input').count();
  const marked = page.evaluate(
    ([name, ms]) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${name} mark after ${ms} ms`)), ms);
        new PerformanceObserver((list, observer) => {
          if (list.getEntries().some((e) => e.name === name)) {
            observer.disconnect();
            clearTimeout(timer);
            resolve(performance.now());
          }
        }).observe({ type: 'mark' });
      }),
    [mark, timeout],
  );
  await page.setInputFiles('#file-input', file);
  return marked;
}

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
export const mb = (bytes) => bytes / 1e6;

/**
 * Measures every size `runs` times in one browser and server, then every file of `files`
 * (given files, such as the real fixtures): `measure(session, file)` (with
 * `session` = { browser, server, browserPid }) opens its own page and returns one run's
 * results; `summarise({ entries, bytes, results })` turns a size's runs into its table row
 * (and may print progress); for a given file `entries` is its name. Returns the rows.
 */
export async function measureSizes({ sizes, runs, depthMin, depthMax, files = [] }, measure, summarise) {
  const server = await startServer();
  const browser = await launchBrowser();
  const session = { browser, server, browserPid: launchedBrowserPid() };
  const rows = [];
  try {
    for (const entries of sizes) {
      const file = dataFile(entries, depthMin, depthMax);
      const bytes = fs.statSync(file).size;
      const results = [];
      for (let r = 0; r < runs; r++) results.push(await measure(session, file));
      rows.push(summarise({ entries, bytes, results }));
    }
    for (const file of files) {
      const results = [];
      for (let r = 0; r < runs; r++) results.push(await measure(session, file));
      rows.push(summarise({ entries: path.basename(file), bytes: fs.statSync(file).size, results }));
    }
  } finally {
    await browser.close();
    server.close();
  }
  return rows;
}
