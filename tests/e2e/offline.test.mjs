// End-to-end tests of offline use (static/sw.js, registered by static/boot.js): after a first
// visit the app starts and opens files with the network gone, the cache holds exactly the built
// site, a new deployment is offered and switched to only when asked, and files that are not part
// of the site (a snapshot a page fetches) are never stored.
//
// Run with `./x test` (which builds dist/ first) or `node --test tests/e2e/offline.test.mjs`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import {
  assertBuilt, DIST, EXPECTATIONS, launchBrowser, metricMismatches, metrics, openFiles, REAL_FIXTURES, ROOT,
  SUB_PATH, waitForServiceWorker, waitSettled,
} from './helpers.mjs';
import { serveStatic } from './server.mjs';

const FIXTURES = path.join(ROOT, 'tests/fixtures');
const expectations = (file) => {
  const raw = JSON.parse(fs.readFileSync(path.join(ROOT, 'tests/expectations', file), 'utf8'));
  return raw.files ?? raw;
};

let browser;
before(async () => {
  assertBuilt();
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

/** The files of a built site the service worker must cache: all but sw.js and hidden files. */
function siteFiles(root) {
  return fs.readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(root, path.join(entry.parentPath ?? entry.path, entry.name)).split(path.sep).join('/'))
    .filter((file) => file !== 'sw.js' && !file.split('/').some((part) => part.startsWith('.')))
    .sort();
}

/** A copy of dist/ in a temporary directory, to deploy new versions to or add files beside. */
function copyOfSite() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memsight-site-'));
  fs.cpSync(DIST, dir, { recursive: true });
  return dir;
}

/** Every cache of the page's origin: { name: [url, …] } with the URLs sorted. */
async function cachedUrls(page) {
  return page.evaluate(async () => {
    const out = {};
    for (const name of await caches.keys()) {
      const requests = await (await caches.open(name)).keys();
      out[name] = requests.map((request) => request.url).sort();
    }
    return out;
  });
}

/** A new page of `context` that records console errors and uncaught errors. */
async function newPage(context) {
  const page = await context.newPage();
  const errors = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(String(error)));
  return { page, errors };
}

/** Opens one file through the file input and checks its overview against a device's numbers. */
async function assertOverview(page, file, expected) {
  await openFiles(page, file);
  assert.equal(await waitSettled(page), 'ready', `${path.basename(file)} did not open`);
  assert.deepEqual(metricMismatches(await metrics(page), expected, path.basename(file)), []);
}

describe('offline', () => {
  it('after a first visit the app starts, opens files and the example with the network gone', { timeout: 180_000 }, async () => {
    const server = await serveStatic(DIST, SUB_PATH);
    const context = await browser.newContext();
    let serverClosed = false;
    try {
      const { page, errors } = await newPage(context);
      await page.goto(server.url);
      await page.waitForSelector('#open-file');
      await waitForServiceWorker(page);

      // The cache holds exactly the built site (sw.js aside), under one versioned name.
      const cached = await cachedUrls(page);
      assert.deepEqual(Object.keys(cached), [cacheName(server.url, DIST)]);
      assert.deepEqual(Object.values(cached)[0], siteFiles(DIST).map((file) => server.url + file).sort());

      // No network at all: the server is gone and the browser is offline.
      await server.close();
      serverClosed = true;
      await context.setOffline(true);
      const reachable = await page.evaluate((url) => fetch(url).then(() => true, () => false), `${server.url}not-in-the-site.txt`);
      assert.equal(reachable, false, 'the network is still reachable');
      errors.length = 0; // the probe's own failure, logged by the browser

      const response = await page.reload();
      assert.equal(response.fromServiceWorker(), true, 'the page did not come from the service worker');
      await page.waitForSelector('#welcome');
      assert.equal(await page.isHidden('#panic-banner'), true);

      await page.click('#open-example');
      assert.equal(await waitSettled(page), 'ready');
      assert.deepEqual(metricMismatches(await metrics(page), expectations('example.json').devices['0'], 'example'), []);

      // A file opened from disk starts a new worker: its files come from the cache too.
      await assertOverview(page, path.join(FIXTURES, 'oom.pickle'), expectations('edge.json')['oom.pickle'].devices['0']);

      const real = smallestRealFixture();
      if (real) await assertOverview(page, real.file, real.expected);
      else console.log(`# real fixtures or ${path.relative(ROOT, EXPECTATIONS)} not found: no real snapshot opened offline`);

      assert.deepEqual(errors, []);
      assert.equal(await page.isHidden('#update-banner'), true);

      // A link to the page with a query and a fragment (as an embedding page makes) is the same page.
      const linked = await page.goto(`${server.url}index.html?embed=1&url=missing.pickle#overview`);
      assert.equal(linked.fromServiceWorker(), true);
      assert.equal(linked.status(), 200);
      await page.waitForSelector('script[data-memsight-js]', { state: 'attached' });
      assert.match(await page.title(), /^memsight/);
    } finally {
      await context.close();
      if (!serverClosed) await server.close();
    }
  });

  it('offers a new deployment in every open tab and switches a tab only when asked', { timeout: 120_000 }, async () => {
    const site = copyOfSite();
    const server = await serveStatic(site, SUB_PATH);
    const context = await browser.newContext();
    try {
      const { page: first, errors: firstErrors } = await newPage(context);
      await first.goto(server.url);
      await first.waitForSelector('#open-file');
      await waitForServiceWorker(first);
      const oldCache = cacheName(server.url, site);
      assert.deepEqual(Object.keys(await cachedUrls(first)), [oldCache]);
      // A file open in the first tab, which must survive the update in the other one.
      await first.click('#open-example');
      assert.equal(await waitSettled(first), 'ready');

      // A new deployment: the page changes, and the build's hook writes the new manifest.
      const index = path.join(site, 'index.html');
      const html = fs.readFileSync(index, 'utf8');
      fs.writeFileSync(index, html.replace('<title>', '<meta name="memsight-test-deploy" content="2">\n  <title>'));
      execFileSync('bash', [path.join(ROOT, 'scripts/precache.sh'), site], { stdio: 'ignore' });

      // A second tab still opens the version it has (the cached one), and the new one is offered.
      const { page: second, errors: secondErrors } = await newPage(context);
      const response = await second.goto(server.url);
      assert.equal(response.fromServiceWorker(), true);
      await second.waitForSelector('#open-file');
      await second.waitForSelector('#update-banner:not([hidden])');
      assert.match(await second.textContent('#update-banner'), /^A new version of memsight is available —\s*Reload/);
      assert.equal(await second.$('meta[name="memsight-test-deploy"]'), null, 'the new version was used before Reload');
      await first.waitForSelector('#update-banner:not([hidden])');
      const newCache = cacheName(server.url, site);
      assert.notEqual(newCache, oldCache);
      // The new version's files are all cached beside the old ones before it is offered.
      assert.deepEqual(Object.keys(await cachedUrls(second)).sort(), [oldCache, newCache].sort());

      // Reload in the second tab: it comes back as the new version, and the old cache is gone.
      await second.click('#update-reload');
      await second.waitForSelector('meta[name="memsight-test-deploy"]', { state: 'attached' });
      await second.waitForSelector('#open-file');
      await waitForServiceWorker(second);
      assert.equal(await second.isHidden('#update-banner'), true);
      const caches = await cachedUrls(second);
      assert.deepEqual(Object.keys(caches), [newCache]);
      assert.deepEqual(caches[newCache], siteFiles(site).map((file) => server.url + file).sort());

      // The first tab is told, not reloaded: its open file is still there until it reloads.
      await first.waitForFunction(() => /updated in another tab/.test(document.querySelector('#update-banner').textContent));
      assert.equal(await first.$('meta[name="memsight-test-deploy"]'), null);
      assert.equal(await first.textContent('.file-item.selected .file-name'), 'example.pickle');
      await first.click('#update-reload');
      await first.waitForSelector('meta[name="memsight-test-deploy"]', { state: 'attached' });
      await first.waitForSelector('#welcome');

      assert.deepEqual(firstErrors, []);
      assert.deepEqual(secondErrors, []);
    } finally {
      await context.close();
      await server.close();
      fs.rmSync(site, { recursive: true, force: true });
    }
  });

  it('never stores a file that is not part of the site, such as a snapshot a page fetches', async () => {
    const site = copyOfSite();
    fs.copyFileSync(path.join(FIXTURES, 'oom.pickle'), path.join(site, 'beside.pickle'));
    const server = await serveStatic(site, SUB_PATH);
    const context = await browser.newContext();
    try {
      const { page, errors } = await newPage(context);
      await page.goto(server.url);
      await page.waitForSelector('#open-file');
      await waitForServiceWorker(page);

      const sizes = await page.evaluate(async () => {
        const sizeOf = async (url) => (await (await fetch(url)).arrayBuffer()).byteLength;
        return [await sizeOf('./beside.pickle'), await sizeOf('./beside.pickle'), await sizeOf('./example.pickle?url=x')];
      });
      const example = fs.statSync(path.join(site, 'example.pickle')).size;
      assert.deepEqual(sizes, [fs.statSync(path.join(site, 'beside.pickle')).size, fs.statSync(path.join(site, 'beside.pickle')).size, example]);
      // Each fetch reached the server: none was answered from a cache.
      const served = (name) => server.requests.filter((url) => new URL(url, server.origin).pathname === SUB_PATH + name);
      assert.equal(served('beside.pickle').length, 2);
      assert.ok(server.requests.includes(`${SUB_PATH}example.pickle?url=x`));

      const cached = Object.values(await cachedUrls(page)).flat();
      assert.ok(!cached.some((url) => url.includes('beside.pickle') || url.includes('?')), `stored: ${cached}`);
      assert.deepEqual(cached.sort(), siteFiles(site).filter((file) => file !== 'beside.pickle').map((file) => server.url + file).sort());
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
      await server.close();
      fs.rmSync(site, { recursive: true, force: true });
    }
  });
});

/** The name of the cache of the version a built site's sw.js holds, served at `url`. */
function cacheName(url, site) {
  const [, version] = /^const VERSION = '([0-9a-f]{16})';$/m.exec(fs.readFileSync(path.join(site, 'sw.js'), 'utf8'));
  return `memsight ${url} ${version}`;
}

/** The smallest real snapshot with one device and expectations, or null when there are none. */
function smallestRealFixture() {
  if (!fs.existsSync(REAL_FIXTURES) || !fs.existsSync(EXPECTATIONS)) return null;
  const raw = JSON.parse(fs.readFileSync(EXPECTATIONS, 'utf8'));
  const candidates = Object.entries(raw.files ?? raw)
    .map(([name, entry]) => ({ file: path.join(REAL_FIXTURES, name), devices: entry.devices ?? entry }))
    .filter(({ file, devices }) => fs.existsSync(file) && Object.keys(devices).length === 1)
    .map(({ file, devices }) => ({ file, expected: Object.values(devices)[0], size: fs.statSync(file).size }))
    .filter(({ expected }) => expected.trace_entries > 0)
    .sort((a, b) => a.size - b.size);
  return candidates[0] ?? null;
}
