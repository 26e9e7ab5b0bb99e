// End-to-end tests of sharing the viewer (dist/) in Debian's headless Chromium: links to a
// view (copied, written by hand, pasted into an open page), snapshots hosted beside the page
// (`?url=`: one, several ranks, a missing one, another origin with and without the page's
// policy widened and the server's CORS, a download cancelled), and the embedded viewer
// (`?embed=1`) driven by the example host page and by a host on another origin.
//
// The site is a copy of dist/ with small snapshots beside it, served under a sub-path as on
// GitHub Pages; a second server on another port is "another origin".
//
// Run with `./x test` (which builds dist/ first) or `node --test tests/e2e/share.test.mjs`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { assertBuilt, DIST, launchBrowser, metrics, openFiles, ROOT, SUB_PATH, waitSettled } from './helpers.mjs';
import { serveStatic } from './server.mjs';

const EXAMPLE = path.join(ROOT, 'static/example.pickle');
const TWO_DEVICES = path.join(ROOT, 'tests/fixtures/two_devices.pickle');
const RANKS = ['small_p2.pickle', 'small_p5.pickle', 'two_devices.pickle'];
const WAIT = 20_000;

let site;
let server;
let other;
let otherDir;
let browser;

/** A copy of dist/ with snapshots beside it: runs/iteration_1/rank{0,1,2}.pickle and a slow one. */
function makeSite() {
  assertBuilt();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memsight-share-'));
  fs.cpSync(DIST, dir, { recursive: true });
  const runs = path.join(dir, 'runs/iteration_1');
  fs.mkdirSync(runs, { recursive: true });
  RANKS.forEach((name, rank) => fs.copyFileSync(path.join(ROOT, 'tests/fixtures', name), path.join(runs, `rank${rank}.pickle`)));
  fs.copyFileSync(EXAMPLE, path.join(dir, 'runs/example.pickle'));
  // A digest of the example (`memsight digest`), as a job's CI would host beside the page.
  execFileSync('cargo', ['run', '-q', '--manifest-path', path.join(ROOT, 'Cargo.toml'), '-p', 'memsight-cli', '--',
    'digest', EXAMPLE, '-o', path.join(dir, 'runs/example.digest.json')], { stdio: 'pipe' });
  // Large enough to be caught downloading: 4 MiB sent 64 KiB every 150 ms.
  fs.writeFileSync(path.join(dir, 'runs/slow.pickle'), Buffer.alloc(4 << 20, 7));
  return dir;
}

before(async () => {
  site = makeSite();
  server = await serveStatic(site, SUB_PATH, { slow: 'slow.pickle', chunkDelayMs: 150 });
  otherDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memsight-other-'));
  fs.copyFileSync(EXAMPLE, path.join(otherDir, 'example.pickle'));
  other = await serveStatic(otherDir, '/', { headers: { 'access-control-allow-origin': '*' } });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.close();
  await other?.close();
  for (const dir of [site, otherDir]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** A fresh context at `url`; errors and CSP violations recorded. */
async function visit(url, contextOptions = {}) {
  const context = await browser.newContext(contextOptions);
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  await page.addInitScript(() => {
    window.__cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  await page.goto(url);
  return { context, page, errors };
}

const dataset = (page, selector) => page.$eval(selector, (e) => ({ ...e.dataset }));

/** Waits until the timeline has its layout and a frame, and nothing moved for a moment. */
async function timelineReady(page) {
  await page.waitForSelector('#timeline[data-ready="true"]', { timeout: WAIT });
  await page.waitForFunction(() => Number(document.querySelector('#timeline')?.dataset.framesPainted) > 0, null, { timeout: WAIT });
}

/** Waits until the address's fragment has settled (the same for 600 ms) and returns it. */
async function settledFragment(page, contains = []) {
  let last = null;
  for (let i = 0; i < 60; i++) {
    const fragment = await page.evaluate(() => location.hash.slice(1));
    if (fragment === last && contains.every((c) => fragment.includes(c))) return fragment;
    last = fragment;
    await page.waitForTimeout(300);
  }
  throw new Error(`the fragment did not settle with ${contains}: ${last}`);
}

/** What a restored view must reproduce. */
async function viewState(page) {
  const t = await dataset(page, '#timeline');
  const table = await dataset(page, '#allocations-table');
  return {
    device: t.device,
    kind: t.kind,
    mode: t.mode,
    start: Number(t.viewStart),
    end: Number(t.viewEnd),
    yZoomed: t.yZoomed,
    colourBy: t.colourBy,
    pinned: t.pinned,
    detail: t.detail,
    tableCount: table.count,
    tableBytes: table.requestedBytes,
    groupBy: await page.$eval('#table-group-by', (s) => s.value),
    minSize: await page.$eval('#table-min-size', (i) => i.value),
    scope: await page.$eval('[id^="table-scope-"][aria-pressed="true"]', (b) => b.id),
  };
}

describe('links to a view', () => {
  it('a copied link reopens the same file in the same view: window, pin, colouring and table', async () => {
    const { context, page, errors } = await visit(server.url, { permissions: ['clipboard-read', 'clipboard-write'] });
    try {
      await openFiles(page, EXAMPLE);
      assert.equal(await waitSettled(page), 'ready');
      await timelineReady(page);
      assert.equal(await page.isDisabled('#copy-link'), false);
      await page.click('#timeline-colour-component');
      await page.click('#timeline-peak');
      await page.click('#table-scope-all');
      await page.fill('#table-min-size', '4096');
      await page.press('#table-min-size', 'Enter');
      await page.waitForFunction(() => document.querySelector('#table-min-size').value === '4096');
      // Select the largest allocation: it is pinned on the timeline too.
      const row = page.locator('#allocations-table [data-element]').first();
      await row.waitFor({ timeout: WAIT });
      const element = await row.getAttribute('data-element');
      await row.click();
      await page.waitForSelector(`#timeline[data-pinned="${element}"]`, { timeout: WAIT });
      const fragment = await settledFragment(page, [`pin=${element}`, 'colour=component', 'x=', 'scope=all', 'min=4096']);
      assert.doesNotMatch(fragment, /example|pickle/, 'a link holds no data from the file');
      const before = await viewState(page);

      const bar = () => page.$eval('.topbar', (t) => {
        const b = document.querySelector('#copy-link').getBoundingClientRect();
        return [t.getBoundingClientRect().height, b.left, b.top];
      });
      const barBefore = await bar();
      await page.click('#copy-link');
      await page.waitForSelector('#copy-link-status', { timeout: WAIT });
      assert.deepEqual(await bar(), barBefore, '"Link copied" does not move the top bar');
      const copied = await page.evaluate(() => navigator.clipboard.readText());
      assert.equal(copied, await page.evaluate(() => location.href));
      assert.ok(copied.endsWith(`#${fragment}`), copied);

      const second = await visit(copied);
      try {
        await openFiles(second.page, EXAMPLE);
        assert.equal(await waitSettled(second.page), 'ready');
        await timelineReady(second.page);
        await second.page.waitForSelector(`#timeline[data-pinned="${element}"]`, { timeout: WAIT });
        await second.page.waitForFunction((n) => document.querySelector('#allocations-table')?.dataset.count === n, before.tableCount, { timeout: WAIT });
        assert.deepEqual(await viewState(second.page), before);
        // The restored view writes the same link back.
        assert.equal(await settledFragment(second.page), fragment);
        assert.deepEqual(second.errors, []);
      } finally {
        await second.context.close();
      }
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('a link written by hand picks the device, the tab, the scope, the grouping, the sort and the section', async () => {
    const { context, page, errors } = await visit(`${server.url}#device=1&view=table&tab=segments&scope=end&group=role&sort=requested:asc`);
    try {
      await openFiles(page, TWO_DEVICES);
      assert.equal(await waitSettled(page), 'ready');
      await page.waitForSelector('#timeline[data-kind="segments"][data-ready="true"]', { timeout: WAIT });
      assert.equal((await dataset(page, '#timeline')).device, '1');
      assert.equal(await page.$eval('#device-picker', (s) => s.value), '1');
      assert.equal(await page.$eval('#table-group-by', (s) => s.value), 'role');
      assert.equal(await page.getAttribute('#table-scope-end', 'aria-pressed'), 'true');
      assert.equal(await page.getAttribute('#allocations-table [data-column="requested"]', 'aria-sort'), 'ascending');
      // The link points at the table: it is brought into view.
      await page.waitForFunction(() => {
        const r = document.querySelector('#allocations-table').getBoundingClientRect();
        return r.top < innerHeight && r.bottom > 0;
      }, null, { timeout: WAIT });
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('a fragment pasted into the open page moves the view there, with its detail', async () => {
    const { context, page } = await visit(server.url);
    try {
      await openFiles(page, EXAMPLE);
      await waitSettled(page);
      await timelineReady(page);
      const states = Number((await dataset(page, '#timeline')).states);
      const [x0, x1] = [Math.floor(states / 4), Math.floor(states / 2)];
      await page.evaluate(([a, b]) => { location.hash = `x=${a}~${b}&detail=5&colour=allocation&group=callsite`; }, [x0, x1]);
      await page.waitForFunction(([a, b]) => {
        const t = document.querySelector('#timeline')?.dataset;
        return t && Number(t.viewStart) === a && Number(t.viewEnd) === b && t.colourBy === 'allocation' && t.detail === '5';
      }, [x0, x1], { timeout: WAIT });
      assert.equal(await page.$eval('#table-group-by', (s) => s.value), 'callsite');
    } finally {
      await context.close();
    }
  });
});

describe('links that wait for their file', () => {
  it('a link to a file opened from disk says what view it holds and opens it once the file is opened', async () => {
    const { context, page, errors } = await visit(`${server.url}#device=0&view=table&pin=3&group=module`);
    try {
      await page.waitForSelector('#link-waiting', { timeout: WAIT });
      const words = await page.textContent('#link-waiting');
      assert.ok(words.includes('the allocations table of device 0, allocation 3 pinned, grouped by module'), words);
      assert.ok(words.includes('links never carry'), words);
      await openFiles(page, EXAMPLE);
      assert.equal(await waitSettled(page), 'ready');
      await page.waitForSelector('#allocations-table[data-ready="true"]', { timeout: WAIT });
      assert.equal(await page.locator('#link-waiting').count(), 0);
      assert.equal(await page.$eval('#table-group-by', (s) => s.value), 'module');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('a link restored with ?url= keeps the file\'s title in view and writes round coordinates', async () => {
    const { context, page, errors } = await visit(`${server.url}?url=runs/example.pickle#view=timeline&x=100.123456789012~900.987654321098`, { viewport: { width: 1024, height: 700 } });
    try {
      await timelineReady(page);
      await settledFragment(page, ['x=']);
      const title = await page.$eval('.file-title', (e) => e.getBoundingClientRect().toJSON());
      assert.ok(title.top >= 0 && title.bottom <= 700, `the title at ${title.top}–${title.bottom}`);
      // Zoomed and panned by keys: the address holds a few digits, not a float's seventeen.
      await page.focus('#timeline-canvas');
      await page.keyboard.press('w');
      await page.keyboard.press('d');
      const fragment = await settledFragment(page, ['x=']);
      const x = new URLSearchParams(fragment).get('x');
      assert.match(x, /^\d+(\.\d{1,4})?~\d+(\.\d{1,4})?$/, fragment);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });
});

describe('snapshots hosted beside the page (?url=)', () => {
  it('opens a snapshot named by the address, with the numbers of the same file opened by hand', async () => {
    const { context, page, errors } = await visit(`${server.url}?url=runs/example.pickle#colour=allocation`);
    try {
      assert.equal(await waitSettled(page), 'ready');
      assert.equal(await page.getAttribute('.file-item.selected .file-name', 'data-name'), 'runs/example.pickle');
      const fetched = await metrics(page);
      await timelineReady(page);
      assert.equal((await dataset(page, '#timeline')).colourBy, 'allocation');
      await openFiles(page, EXAMPLE);
      await waitSettled(page);
      assert.deepEqual(await metrics(page), fetched);
      assert.deepEqual(await page.evaluate(() => window.__cspViolations), []);
      assert.deepEqual(errors, []);
      // The address keeps naming the file, so a copied link opens it again.
      assert.match(await page.evaluate(() => location.search), /url=runs%2Fexample.pickle|url=runs\/example.pickle/);
    } finally {
      await context.close();
    }
  });

  it('a digest named by the address is held on the page, as one opened from disk', async () => {
    const { context, page, errors } = await visit(`${server.url}?url=runs/example.digest.json`);
    try {
      await page.waitForSelector('#digest-file', { timeout: WAIT });
      assert.match(await page.textContent('.file-item.selected'), /Digest/);
      assert.match(await page.textContent('#digest-note'), /need the snapshot itself/);
      // Its numbers are the snapshot's: the same file opened by hand peaks as high.
      const peak = await page.$eval('#digest-file [data-metric="peak-allocated-bytes"]', (e) => e.dataset.value);
      await openFiles(page, EXAMPLE);
      assert.equal(await waitSettled(page), 'ready');
      assert.equal((await metrics(page))['peak-allocated-bytes'], BigInt(peak));
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('several ranks open side by side, read as ranks and iterations', async () => {
    const urls = [2, 0, 1].map((r) => `url=runs/iteration_1/rank${r}.pickle`).join('&');
    const { context, page } = await visit(`${server.url}?${urls}`);
    try {
      await page.waitForSelector('#files-view', { timeout: WAIT });
      await page.waitForFunction(() => document.querySelectorAll('.file-item[data-status="ready"]').length === 3, null, { timeout: WAIT });
      const names = await page.$$eval('.file-item .file-name', (e) => e.map((n) => n.dataset.name));
      assert.deepEqual(names, [0, 1, 2].map((r) => `runs/iteration_1/rank${r}.pickle`));
      // One row per file and device (rank 2 has two devices), each with its rank and iteration.
      await page.waitForFunction(() => document.querySelectorAll('#files-table .files-row').length === 4, null, { timeout: WAIT });
      const cells = await page.$$eval('#files-table .files-row', (rows) => rows.map((r) => {
        const cell = (c) => r.querySelector(`td[data-column="${c}"]`)?.dataset.value;
        return [cell('rank'), cell('iteration')];
      }));
      assert.deepEqual(cells, [['0', '1'], ['1', '1'], ['2', '1'], ['2', '1']]);
    } finally {
      await context.close();
    }
  });

  it('a missing file and a file on another origin say why, and nothing is fetched from it', async () => {
    const before = other.requests.length;
    const { context, page } = await visit(`${server.url}?url=runs/missing.pickle&url=${encodeURIComponent(`${other.origin}/example.pickle`)}`);
    try {
      await page.waitForFunction(() => document.querySelectorAll('.file-item[data-status="failed"]').length === 2, null, { timeout: WAIT });
      const texts = [];
      for (const item of await page.$$('.file-item')) {
        await item.click();
        await page.waitForSelector('#error-report', { timeout: WAIT });
        texts.push(await page.textContent('#error-report'));
      }
      const all = texts.join('\n');
      assert.match(all, /The server answered 404 Not Found for .*runs\/missing\.pickle/);
      assert.match(all, new RegExp(`only fetches files from its own site \\(${server.origin}\\), and the snapshot is on ${other.origin}`));
      assert.match(all, /connect-src/);
      assert.equal(other.requests.length, before, 'the other origin was never asked');
      assert.deepEqual(await page.evaluate(() => window.__cspViolations), []);
    } finally {
      await context.close();
    }
  });

  it('another origin loads once the page allows it and the server allows CORS; without CORS it says so', async () => {
    // The page's author widens connect-src in index.html.
    const widened = fs.mkdtempSync(path.join(os.tmpdir(), 'memsight-widened-'));
    fs.cpSync(site, widened, { recursive: true });
    const index = path.join(widened, 'index.html');
    const noCorsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memsight-nocors-'));
    fs.copyFileSync(EXAMPLE, path.join(noCorsDir, 'example.pickle'));
    const noCors = await serveStatic(noCorsDir, '/');
    fs.writeFileSync(index, fs.readFileSync(index, 'utf8').replace("connect-src 'self'", `connect-src 'self' ${other.origin} ${noCors.origin}`));
    const widenedServer = await serveStatic(widened, SUB_PATH);
    other.requests.length = 0;
    const cors = encodeURIComponent(`${other.origin}/example.pickle`);
    const blocked = encodeURIComponent(`${noCors.origin}/example.pickle`);
    const { context, page } = await visit(`${widenedServer.url}?url=${cors}&url=${blocked}`);
    try {
      await page.waitForFunction(() => document.querySelectorAll('.file-item:not([data-status="downloading"]):not([data-status="loading"]):not([data-status="queued"])').length === 2, null, { timeout: WAIT });
      const statuses = await page.$$eval('.file-item', (e) => e.map((i) => [i.querySelector('.file-name').dataset.name, i.dataset.status]));
      assert.deepEqual(new Map(statuses), new Map([
        [`127.0.0.1:${new URL(other.origin).port}/example.pickle`, 'ready'],
        [`127.0.0.1:${new URL(noCors.origin).port}/example.pickle`, 'failed'],
      ]));
      assert.ok(other.requests.includes('/example.pickle'));
      await page.click('.file-item[data-status="failed"]');
      assert.match(await page.textContent('#error-report'), /refused this page's cross-origin request/);
      assert.match(await page.textContent('#error-report'), new RegExp(`Access-Control-Allow-Origin: ${widenedServer.origin}`));
    } finally {
      await context.close();
      await widenedServer.close();
      await noCors.close();
      fs.rmSync(widened, { recursive: true, force: true });
      fs.rmSync(noCorsDir, { recursive: true, force: true });
    }
  });

  it('shows the download as it comes and Cancel stops it', async () => {
    const { context, page } = await visit(`${server.url}?url=runs/slow.pickle`);
    try {
      await page.waitForSelector('#load-progress[data-downloading="true"]', { timeout: WAIT });
      await page.waitForFunction(() => Number(document.querySelector('#load-progress')?.dataset.bytesRead) > 0, null, { timeout: WAIT });
      assert.equal((await dataset(page, '#load-progress')).total, String(4 << 20));
      assert.match(await page.textContent('.file-item .file-status'), /Downloading \d+%/);
      await page.click('#cancel-load');
      await page.waitForSelector('#welcome', { timeout: WAIT });
      assert.equal(await page.locator('.file-item').count(), 0);
    } finally {
      await context.close();
    }
  });
});

describe('the embedded viewer', () => {
  it('the example host page hands it a snapshot and hears it load, select and change view', async () => {
    const reference = await visit(server.url);
    await openFiles(reference.page, EXAMPLE);
    await waitSettled(reference.page);
    const peak = (await metrics(reference.page))['peak-allocated-bytes'];
    await reference.context.close();

    const { context, page, errors } = await visit(`${server.url}embed-example.html`);
    try {
      await page.waitForSelector('#events li[data-type="memsight:ready"]', { timeout: WAIT });
      await page.click('#send-example');
      const loaded = await page.waitForSelector('#events li[data-type="memsight:loaded"]', { timeout: WAIT });
      assert.equal(BigInt(await loaded.getAttribute('data-peak')), peak);
      const frame = page.frameLocator('#viewer');
      // One view, no file list and no toolbar.
      await frame.locator('#timeline[data-ready="true"]').waitFor({ timeout: WAIT });
      assert.equal(await frame.locator('.sidebar, .topbar, #allocations-table, #breakdown').count(), 0);
      // The view the host sent with the file (colour by role), then another one.
      assert.equal(await frame.locator('#timeline').getAttribute('data-colour-by'), 'role');
      await page.click('#colour-component');
      await frame.locator('#timeline[data-colour-by="component"]').waitFor({ timeout: WAIT });
      await page.waitForSelector('#events li[data-type="memsight:view"][data-view*="colour=component"]', { timeout: WAIT });
      // A pin is a selection the host hears of.
      await page.evaluate(() => {
        const f = document.getElementById('viewer');
        f.contentWindow.postMessage({ type: 'memsight:view', view: 'pin=2' }, new URL(f.src, document.baseURI).origin);
      });
      await page.waitForSelector('#events li[data-type="memsight:selection"][data-allocation="2"]', { timeout: WAIT });
      // A view naming another panel switches the frame to it and keeps what it does not name.
      const sendView = (view, replace) => page.evaluate(([v, r]) => {
        const f = document.getElementById('viewer');
        f.contentWindow.postMessage({ type: 'memsight:view', view: v, replace: r }, new URL(f.src, document.baseURI).origin);
      }, [view, replace]);
      for (const panel of ['table', 'breakdown']) {
        await sendView(`view=${panel}`);
        await frame.locator(`.app[data-view="${panel}"]`).waitFor({ timeout: WAIT });
        await frame.locator(panel === 'table' ? '#allocations-table[data-ready="true"]' : '#breakdown').waitFor({ timeout: WAIT });
        assert.equal(await frame.locator('#timeline').count(), 0, `only the ${panel}`);
      }
      await sendView('view=timeline');
      await frame.locator('#timeline[data-ready="true"]').waitFor({ timeout: WAIT });
      assert.equal(await frame.locator('#timeline').getAttribute('data-colour-by'), 'component', 'the colouring sent before stays');
      assert.equal(await frame.locator('#timeline').getAttribute('data-pinned'), '2', 'so does the pin');
      // `replace` starts from the default view.
      await sendView('view=timeline', true);
      await frame.locator('#timeline[data-colour-by="role"]').waitFor({ timeout: WAIT });
      // A message of a kind memsight does not know is refused, saying so.
      await page.evaluate(() => {
        const f = document.getElementById('viewer');
        f.contentWindow.postMessage({ type: 'memsight:explode' }, new URL(f.src, document.baseURI).origin);
      });
      await page.waitForSelector('#events li[data-type="memsight:error"]', { timeout: WAIT });
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('shows the one view its address names', async () => {
    const { context, page } = await visit(`${server.url}?embed=1&view=table&url=runs/example.pickle`);
    try {
      await page.waitForSelector('#allocations-table[data-ready="true"]', { timeout: WAIT });
      assert.equal(await page.locator('#timeline, #breakdown, .sidebar').count(), 0);
      assert.equal(await page.getAttribute('.app', 'data-view'), 'table');
    } finally {
      await context.close();
    }
  });

  it('an embedded viewer starts no worker ahead of a second file once its file is loaded; the full page does', async () => {
    const decodingWorkers = (page) => page.workers().filter((w) => w.url().endsWith('/worker_loader.js')).length;
    const full = await visit(`${server.url}?url=runs/example.pickle`);
    try {
      await timelineReady(full.page);
      // The next file's worker, started a moment after the load.
      for (let i = 0; i < 100 && decodingWorkers(full.page) < 2; i++) await full.page.waitForTimeout(100);
      assert.equal(decodingWorkers(full.page), 2, 'the full page keeps a worker ready for the next file');
    } finally {
      await full.context.close();
    }
    const embedded = await visit(`${server.url}?embed=1&url=runs/example.pickle`);
    try {
      await timelineReady(embedded.page);
      // Longer than the full page took to start its next worker.
      await embedded.page.waitForTimeout(3_000);
      assert.equal(decodingWorkers(embedded.page), 1, 'only the loaded file\'s worker');
    } finally {
      await embedded.context.close();
    }
  });

  it('a host on another origin is heard only when the frame names it, and told only of the files it handed over', async () => {
    const hostDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memsight-host-'));
    const hostServer = await serveStatic(hostDir, '/');
    const hostPage = (query) => `<!DOCTYPE html><meta charset="utf-8">
      <iframe id="viewer" src="${server.url}index.html?embed=1${query}"></iframe>
      <script>
        window.__events = [];
        const frame = document.getElementById('viewer');
        const viewer = new URL(frame.src).origin;
        addEventListener('message', async (e) => {
          if (e.source !== frame.contentWindow || e.origin !== viewer) return;
          window.__events.push(e.data.type);
        });
        window.sendExample = async () => {
          const bytes = await (await fetch('example.pickle')).arrayBuffer();
          frame.contentWindow.postMessage({ type: 'memsight:open', name: 'from-host.pickle', bytes }, viewer, [bytes]);
        };
      </script>`;
    fs.copyFileSync(EXAMPLE, path.join(hostDir, 'example.pickle'));
    fs.writeFileSync(path.join(hostDir, 'unnamed.html'), hostPage(''));
    fs.writeFileSync(path.join(hostDir, 'named.html'), hostPage(`&host=${encodeURIComponent(hostServer.origin)}&url=runs/example.pickle`));
    const { context, page } = await visit(`${hostServer.url}unnamed.html`);
    try {
      const frame = page.frameLocator('#viewer');
      await frame.locator('#welcome').waitFor({ timeout: WAIT });
      await page.evaluate(() => window.sendExample());
      // Ignored, and said so, in the frame and to the host: which origin, and how to allow it.
      await frame.locator('#embed-refused').waitFor({ timeout: WAIT });
      assert.equal(await frame.locator('.file-item, #snapshot, #load-progress').count(), 0, 'a host the frame does not name is ignored');
      assert.equal(await frame.locator('#embed-refused').getAttribute('data-origin'), hostServer.origin);
      const refused = await frame.locator('#embed-refused').textContent();
      assert.ok(refused.includes(`A page at ${hostServer.origin} `) && refused.includes(`&host=${encodeURIComponent(hostServer.origin)}`), refused);
      await page.waitForFunction(() => window.__events.length > 0, null, { timeout: WAIT });
      assert.deepEqual(await page.evaluate(() => window.__events), ['memsight:error'], 'told it was refused, nothing else');

      // Named, it hears the frame is ready — but nothing of a file the frame fetched itself
      // (`?url=`): that is spoken of only to a page of the viewer's own origin.
      await page.goto(`${hostServer.url}named.html`);
      await page.waitForFunction(() => window.__events.includes('memsight:ready'), null, { timeout: WAIT });
      await frame.locator('#timeline[data-ready="true"]').waitFor({ timeout: WAIT });
      await page.evaluate(() => {
        const f = document.getElementById('viewer');
        f.contentWindow.postMessage({ type: 'memsight:view', view: 'pin=1' }, new URL(f.src).origin);
      });
      await frame.locator('#timeline[data-pinned="1"]').waitFor({ timeout: WAIT });
      await page.waitForTimeout(1000);
      assert.deepEqual(await page.evaluate(() => window.__events), ['memsight:ready']);

      // Its own file it hears of.
      await page.evaluate(() => window.sendExample());
      await page.waitForFunction(() => window.__events.includes('memsight:loaded'), null, { timeout: WAIT });
      await frame.locator('#timeline[data-ready="true"]').waitFor({ timeout: WAIT });
      assert.equal(await frame.locator('.file-title').first().textContent(), 'from-host.pickle');
    } finally {
      await context.close();
      await hostServer.close();
      fs.rmSync(hostDir, { recursive: true, force: true });
    }
  });
  it('a host on another site, whose browser refuses the frame storage, opens, switches and reopens files', async () => {
    // Another site, not only another origin: localhost against 127.0.0.1.
    const hostDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memsight-site-'));
    const hostServer = await serveStatic(hostDir, '/');
    const hostOrigin = hostServer.origin.replace('127.0.0.1', 'localhost');
    fs.copyFileSync(EXAMPLE, path.join(hostDir, 'example.pickle'));
    fs.writeFileSync(path.join(hostDir, 'docs.html'), `<!DOCTYPE html><meta charset="utf-8">
      <iframe id="viewer" width="1000" height="700" src="${server.url}index.html?embed=1&host=${encodeURIComponent(hostOrigin)}"></iframe>
      <script>
        window.__events = [];
        const frame = document.getElementById('viewer');
        const viewer = new URL(frame.src).origin;
        addEventListener('message', (e) => {
          if (e.source !== frame.contentWindow || e.origin !== viewer) return;
          window.__events.push(e.data.reason ? e.data.type + ':' + e.data.reason : e.data.type);
        });
        window.send = async (name) => {
          const bytes = await (await fetch('example.pickle')).arrayBuffer();
          frame.contentWindow.postMessage({ type: 'memsight:open', name, bytes }, viewer, [bytes]);
        };
        window.view = (view) => frame.contentWindow.postMessage({ type: 'memsight:view', view }, viewer);
      </script>`);
    const browser = await launchBrowser();
    const context = await browser.newContext();
    // A browser blocking third-party storage (Safari, Firefox's strict mode, Chrome without
    // third-party cookies: Debian's Chromium 156 by default) throws on the frame's first
    // touch of localStorage. A browser that lets the frame have it is made to refuse, so the
    // test holds either way; which it was is kept in `__storage`.
    await context.addInitScript(() => {
      let crossSite;
      try { crossSite = window.top.location.hostname !== location.hostname; } catch { crossSite = true; }
      if (!crossSite) return;
      try {
        window.localStorage.getItem('memsight:probe');
      } catch {
        window.__storage = 'refused by the browser';
        return;
      }
      window.__storage = 'refused by the test';
      const refuse = () => { throw new DOMException('The operation is insecure.', 'SecurityError'); };
      Object.defineProperty(window, 'localStorage', { get: refuse, configurable: true });
      Object.defineProperty(window, 'sessionStorage', { get: refuse, configurable: true });
    });
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    try {
      await page.goto(`${hostOrigin}/docs.html`);
      const frame = page.frameLocator('#viewer');
      await page.waitForFunction(() => window.__events.includes('memsight:ready'), null, { timeout: WAIT });
      const viewerFrame = page.frames().find((f) => f !== page.mainFrame());
      const storageRefused = await viewerFrame.evaluate(() => {
        try { return !window.localStorage; } catch { return true; }
      });
      assert.ok(storageRefused, 'the frame has no storage');
      console.log(`cross-site frame storage: ${await viewerFrame.evaluate(() => window.__storage)}`);

      await page.evaluate(() => window.send('first.pickle'));
      await page.waitForFunction(() => window.__events.includes('memsight:loaded'), null, { timeout: WAIT });
      await frame.locator('#timeline[data-ready="true"]').waitFor({ timeout: WAIT });
      assert.equal(await frame.locator('.file-title').first().textContent(), 'first.pickle');

      // Switched to another view and back, as a docs page's buttons would.
      await page.evaluate(() => window.view('view=table'));
      await frame.locator('#allocations-table').waitFor({ timeout: WAIT });
      await page.evaluate(() => window.view('view=timeline'));
      await frame.locator('#timeline[data-ready="true"]').waitFor({ timeout: WAIT });

      // Reopened with another file: loaded again, and the frame still answers.
      await page.evaluate(() => window.send('second.pickle'));
      await page.waitForFunction(() => window.__events.filter((t) => t === 'memsight:loaded').length >= 2, null, { timeout: WAIT });
      await frame.locator('#timeline[data-ready="true"]').waitFor({ timeout: WAIT });
      assert.equal(await frame.locator('.file-title').first().textContent(), 'second.pickle');

      const events = await page.evaluate(() => window.__events);
      assert.ok(!events.some((t) => t.startsWith('memsight:error') || t === 'memsight:failed'), events.join(', '));
      assert.equal(await frame.locator('#panic-banner:not([hidden])').count(), 0, 'no crash');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
      await browser.close();
      await hostServer.close();
      fs.rmSync(hostDir, { recursive: true, force: true });
    }
  });
});

