// Shared set-up for the end-to-end tests: the built site, Debian's Chromium driven by
// playwright-core (no browser download), and small page helpers.
import fs from 'node:fs';
import { after, before } from 'node:test';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

import { serveStatic } from './server.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const DIST = path.join(ROOT, 'dist');
/** Real snapshots, outside the repository (never copied into it). */
export const REAL_FIXTURES = process.env.MEMSIGHT_REAL_FIXTURES ?? path.resolve(ROOT, '../shared/fixtures/real');
export const EXPECTATIONS = path.join(ROOT, 'tests/expectations/real.json');
export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
/** The site is served under a sub-path, as on GitHub Pages, to check relative asset paths. */
export const SUB_PATH = '/memsight/';

export function assertBuilt() {
  if (!fs.existsSync(path.join(DIST, 'index.html'))) {
    throw new Error('dist/ is not built: run `./x test` (or `trunk build --release`) first');
  }
}

export async function startServer() {
  assertBuilt();
  return serveStatic(DIST, SUB_PATH);
}

/** Debian's Chromium, headless, with a fresh temporary profile (Playwright makes one per launch). */
export async function launchBrowser() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-sync',
      '--disable-quic',
    ],
  });
}

/**
 * One static server and one browser for a test file, started before its tests and closed
 * after them; `open(contextOptions)` opens the app in a fresh context of that browser.
 */
export function sharedBrowser() {
  let server;
  let browser;
  before(async () => {
    server = await startServer();
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });
  return {
    open: (contextOptions = {}, query) => openApp(browser, server, contextOptions, query),
    get server() { return server; },
    get browser() { return browser; },
  };
}

/**
 * `MEMSIGHT_STARTUP=plain node --test tests/e2e/…` opens the app with every startup trick off
 * (`?startup=plain`: no rehearsal, no worker started ahead or warmed up, no first view made
 * before it is asked for), so the views are tested without them too.
 */
export const STARTUP_QUERY = process.env.MEMSIGHT_STARTUP === 'plain' ? '?startup=plain' : '';

/** The options of a test of a startup trick itself: skipped when the tricks are off. */
export const PLAIN_SKIP = { skip: STARTUP_QUERY ? 'tests a startup trick, off in a plain startup' : false };

/**
 * Opens the app in a fresh context (with Playwright `contextOptions`, e.g. a
 * `deviceScaleFactor`). Records every request (page and workers), console errors, uncaught
 * errors and Content-Security-Policy violations.
 */
export async function openApp(browser, server, contextOptions = {}, query = STARTUP_QUERY) {
  const context = await browser.newContext(contextOptions);
  const requests = [];
  context.on('request', (request) => requests.push(request.url()));
  const page = await context.newPage();
  const errors = recordErrors(page);
  await page.addInitScript(() => {
    window.__cspViolations = [];
    document.addEventListener('securitypolicyviolation', (event) => {
      window.__cspViolations.push(`${event.violatedDirective} blocked ${event.blockedURI}`);
    });
  });
  await page.goto(server.url + query);
  await page.waitForSelector('#open-file');
  // From here on every request is the app's own, not the service worker caching the site.
  await waitForServiceWorker(page);
  return { context, page, requests, errors };
}

/** The page's console errors and uncaught errors, as they come. */
export function recordErrors(page) {
  const errors = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(String(error)));
  return errors;
}

/**
 * Waits until the service worker (static/sw.js) has cached the site and controls the page, as
 * it does on a first visit: from then on the app would start with no network.
 */
export async function waitForServiceWorker(page, timeout = 30_000) {
  try {
    await page.waitForFunction(() => navigator.serviceWorker.controller?.state === 'activated', null, { timeout });
  } catch (error) {
    throw new Error(`the service worker did not take control of the page: ${error.message}`);
  }
}

/** Opens local files through the file input; resolves once each new file is listed. */
export async function openFiles(page, files) {
  const before = await page.locator('.file-item').count();
  await page.setInputFiles('#file-input', files);
  await page.waitForFunction(
    (n) => document.querySelectorAll('.file-item').length >= n,
    before + [files].flat().length,
  );
}

/** Waits until the selected file is no longer loading; returns its status. */
export async function waitSettled(page, timeout = 60_000) {
  const handle = await page.waitForFunction(
    () => {
      const item = document.querySelector('.file-item.selected');
      const status = item?.dataset.status;
      if (status === 'failed') return status;
      // Ready means decoded and its overview (or the empty-snapshot note, or a digest's view)
      // rendered.
      if (status === 'ready' && (document.querySelector('#overview') || document.querySelector('#empty-snapshot') || document.querySelector('#digest-file'))) {
        return status;
      }
      return false;
    },
    null,
    { timeout },
  );
  return handle.jsonValue();
}

/** The overview's metrics as { key: BigInt(value) }. */
export async function metrics(page) {
  const pairs = await page.$$eval('[data-metric]', (elements) =>
    elements.map((e) => [e.dataset.metric, e.dataset.value]),
  );
  return Object.fromEntries(pairs.map(([k, v]) => [k, BigInt(v)]));
}

/** Per-device keys of tests/expectations/*.json → `data-metric` keys of the overview. */
const EXPECTED_METRICS = {
  reserved_bytes: 'reserved-end-bytes',
  allocated_bytes: 'allocated-end-bytes',
  segments: 'segment-count',
  blocks: 'block-count',
  trace_entries: 'trace-entries',
  peak_allocated_bytes: 'peak-allocated-bytes',
  peak_reserved_bytes: 'peak-reserved-bytes',
  reserved_at_peak_bytes: 'reserved-at-peak-bytes',
  oom_index: 'oom-event',
  allocated_at_oom_bytes: 'allocated-at-oom-bytes',
  reserved_at_oom_bytes: 'reserved-at-oom-bytes',
};
/** Trace actions (`alloc`, `free_requested`…) → `data-metric` key of their count. */
const actionMetric = (action) => `trace-${action.replaceAll('_', '-')}-count`;

/**
 * Where the overview's metrics (`metrics(page)`) differ from one device's expectations: one
 * sentence per metric missing or wrong, starting with `label`; none when all agree.
 */
export function metricMismatches(got, expected, label) {
  const failures = [];
  const check = (key, want) => {
    if (!(key in got)) failures.push(`${label}: no metric ${key}`);
    else if (got[key] !== BigInt(want)) failures.push(`${label}: ${key} = ${got[key]}, expected ${want}`);
  };
  for (const [field, key] of Object.entries(EXPECTED_METRICS)) {
    if (field in expected) check(key, expected[field]);
  }
  for (const [action, count] of Object.entries(expected.actions ?? {})) check(actionMetric(action), count);
  return failures;
}

/** The numbers of the User Timing marks with `name`. */
export async function marks(page, name) {
  return page.evaluate((n) => performance.getEntriesByName(n, 'mark').map((m) => m.startTime), name);
}

export function tempFile(name, bytes) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memsight-e2e-'));
  const file = path.join(dir, name);
  fs.writeFileSync(file, bytes);
  return file;
}

/** Picks a moment by a click on the breakdown's stacked area of the run, at a share of its width and height. */
export async function clickSeries(page, x = 0.3, y = 0.6) {
  await page.waitForSelector('#chart-series canvas');
  const series = await page.$eval('#chart-series canvas', (c) => {
    c.scrollIntoView({ block: 'center' });
    const r = c.getBoundingClientRect();
    return { x: r.x, y: r.y, w: r.width, h: r.height };
  });
  await page.mouse.click(series.x + series.w * x, series.y + series.h * y);
}
