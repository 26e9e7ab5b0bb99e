// End-to-end tests of the built viewer (dist/) in Debian's headless Chromium: start-up under
// the Content-Security-Policy, opening files (input, example), overview numbers against the
// expectations of real snapshots, error reports, privacy (no request leaves the origin),
// responsiveness during a large load, and Cancel.
//
// Run with `./x test` (which builds dist/ first) or `node --test tests/e2e/*.test.mjs`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import zlib from 'node:zlib';

import {
  DIST, EXPECTATIONS, marks, metricMismatches, metrics, openFiles, PLAIN_SKIP, REAL_FIXTURES, recordErrors, ROOT,
  sharedBrowser, SUB_PATH, tempFile, waitSettled,
} from './helpers.mjs';
import { serveStatic } from './server.mjs';

/** A pickle that would call os.system('echo pwned') if it were unpickled by Python. */
const HOSTILE_PICKLE = Buffer.from('\x80\x02cposix\nsystem\nq\x00X\x0a\x00\x00\x00echo pwnedq\x01\x85q\x02Rq\x03.', 'latin1');

const app = sharedBrowser();

/** A copy of the built site (one flat folder) in a temporary folder, but for the files named in `leaveOut`. */
function copyOfSite(leaveOut = []) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memsight-site-'));
  for (const name of fs.readdirSync(DIST)) {
    if (!leaveOut.includes(name)) fs.copyFileSync(path.join(DIST, name), path.join(dir, name));
  }
  return dir;
}

/**
 * A copy of the built site whose decoding workers run `prelude` first (to stand for another
 * browser), served on its own; `close()` ends both.
 */
async function siteWithWorkerPrelude(prelude) {
  const dir = copyOfSite();
  const loader = path.join(dir, 'worker_loader.js');
  fs.writeFileSync(loader, `${prelude}\n${fs.readFileSync(loader, 'utf8')}`);
  const server = await serveStatic(dir, SUB_PATH);
  return {
    url: server.url,
    close: async () => {
      await server.close();
      fs.rmSync(dir, { recursive: true });
    },
  };
}

describe('start-up', () => {
  it('boots under a sub-path with the strict Content-Security-Policy and no errors', async () => {
    const { context, page, requests, errors } = await app.open();
    try {
      await page.waitForSelector('#welcome');
      const csp = await page.getAttribute('meta[http-equiv="Content-Security-Policy"]', 'content');
      assert.match(csp, /connect-src 'self'/);
      assert.match(csp, /default-src 'none'/);
      assert.doesNotMatch(csp, /'unsafe-inline'|'unsafe-eval'|\*/, 'no inline scripts, no eval, no wildcards');
      // No inline script at all in the built page.
      const inline = await page.$$eval('script:not([src])', (s) => s.length);
      assert.equal(inline, 0, 'the built page has inline scripts');
      assert.deepEqual(await page.evaluate(() => window.__cspViolations), []);
      assert.deepEqual(errors, []);
      assert.ok(requests.every((url) => url.startsWith(app.server.url)), `requests outside the site: ${requests}`);
      assert.equal(await page.isHidden('#panic-banner'), true);
    } finally {
      await context.close();
    }
  });

  it('warms the next worker up unseen: a file opened meanwhile shows its own numbers, and nothing else shows', PLAIN_SKIP, async () => {
    const example = tempFile('warming.pickle', fs.readFileSync(path.join(DIST, 'example.pickle')));
    // The numbers of the example opened once every worker has finished warming up.
    const settled = await app.open();
    let expected;
    try {
      await settled.page.waitForTimeout(3000);
      assert.equal(await settled.page.isVisible('#welcome'), true, 'the warm-up showed something');
      assert.equal(await settled.page.locator('.file-item').count(), 0);
      assert.deepEqual(settled.errors, []);
      await openFiles(settled.page, example);
      assert.equal(await waitSettled(settled.page), 'ready');
      expected = await metrics(settled.page);
    } finally {
      await settled.context.close();
    }
    // The same file, opened while a spare worker loads its warm-up snapshot: the file goes as
    // soon as the mark the warm-up starts from (in the worker's timeline until it ends) is
    // seen. A page starts a spare worker as it opens, and another once a file has loaded: if
    // the first one's warm-up ended before the page was ready, a first file starts the next.
    const { context, page, errors } = await app.open();
    try {
      // (The next spare starts 1.5 s after a load ends.)
      const warming = async () => {
        for (const deadline = Date.now() + 5000; Date.now() < deadline;) {
          const marks = await Promise.all(page.workers().map((worker) =>
            worker.evaluate(() => performance.getEntriesByName('memsight:worker-warm-up').length > 0).catch(() => false)));
          if (marks.some(Boolean)) return true;
        }
        return false;
      };
      let files = 0;
      let caught = await warming();
      if (!caught) {
        await openFiles(page, tempFile('first.pickle', fs.readFileSync(path.join(DIST, 'example.pickle'))));
        assert.equal(await waitSettled(page), 'ready');
        files = 1;
        caught = await warming();
      }
      assert.ok(caught, 'no spare worker was seen warming up');
      const decodedBefore = (await marks(page, 'memsight:decoded')).length;
      await openFiles(page, example);
      assert.equal(await waitSettled(page), 'ready');
      assert.equal(await page.textContent('#snapshot .file-title'), 'warming.pickle');
      assert.deepEqual(await metrics(page), expected);
      await page.waitForTimeout(1500);
      assert.equal(await page.locator('.file-item').count(), files + 1);
      assert.deepEqual(await metrics(page), expected, 'a warm-up load reached the page');
      const decoded = (await marks(page, 'memsight:decoded')).length - decodedBefore;
      assert.equal(decoded, 1, 'the page heard of more than one load');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('blocks any attempt to send data to another origin', async () => {
    const { context, page } = await app.open();
    try {
      const outcome = await page.evaluate(() =>
        fetch('http://127.0.0.2:9/upload', { method: 'POST', body: 'secret' }).then(() => 'sent', () => 'blocked'),
      );
      assert.equal(outcome, 'blocked');
      const violations = await page.evaluate(() => window.__cspViolations);
      assert.ok(violations.some((v) => v.startsWith('connect-src')), `no CSP violation reported: ${violations}`);
    } finally {
      await context.close();
    }
  });
});

describe('animation frames held back', () => {
  // A page opened in a background tab gets no animation frames until it is shown, and a busy
  // page gets them late; its rehearsal of a first load (src/ui/rehearsal.rs) may end meanwhile,
  // on its own timer or because a file was opened. The frames its views asked for then come
  // after those views are gone.
  /**
   * Opens the app in a page whose animation frames are held back until `releaseFrames`, runs
   * `steps(page)`, then expects the selected file's timeline on screen with no error.
   */
  async function withFramesHeld(steps) {
    const context = await app.browser.newContext();
    try {
      const { page, errors } = await openHoldingFrames(context);
      await steps(page);
      await shownWithoutErrors(page, errors);
    } finally {
      await context.close();
    }
  }

  async function openHoldingFrames(context) {
    const page = await context.newPage();
    const errors = recordErrors(page);
    await page.addInitScript(() => {
      const held = [];
      let holding = true;
      const request = window.requestAnimationFrame.bind(window);
      // Kept in place once released: a script may have taken this function meanwhile.
      window.requestAnimationFrame = (callback) => (holding ? held.push(callback) : request(callback));
      window.heldFrames = () => held.length;
      window.releaseFrames = () => {
        holding = false;
        for (const callback of held) request(callback);
        return held.length;
      };
      window.rehearsal = 'not started';
      new MutationObserver(() => {
        const present = Boolean(document.querySelector('.rehearsal'));
        if (present) window.rehearsal = 'running';
        else if (window.rehearsal === 'running') window.rehearsal = 'ended';
      }).observe(document, { subtree: true, childList: true });
    });
    await page.goto(app.server.url);
    await page.waitForSelector('#open-file');
    return { page, errors };
  }

  /** Lets the held frames run, then two more. */
  async function releaseFrames(page) {
    const held = await page.evaluate(() => window.releaseFrames());
    await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
    return held;
  }

  /** The selected file's timeline is on screen, and nothing went wrong on the way. */
  async function shownWithoutErrors(page, errors) {
    assert.equal(await waitSettled(page), 'ready');
    await page.waitForSelector('#timeline[data-ready="true"]');
    assert.deepEqual(errors, []);
    assert.equal(await page.isHidden('#panic-banner'), true);
  }

  const polling = { polling: 20, timeout: 30_000 };

  it('the rehearsal ends with frames still to come, and they come to nothing', () => withFramesHeld(async (page) => {
    await page.waitForFunction(() => window.rehearsal === 'ended', null, polling);
    assert.ok(await releaseFrames(page) > 0, 'the rehearsal asked for no frame: nothing was tested');
    await page.click('#open-example');
  }));

  it('a file opened while the rehearsal waits for a frame ends it, and opens', () => withFramesHeld(async (page) => {
    await page.waitForFunction(() => window.rehearsal === 'running' && window.heldFrames() > 0, null, polling);
    await page.click('#open-example');
    await page.waitForFunction(() => window.rehearsal === 'ended', null, polling);
    assert.ok(await releaseFrames(page) > 0);
  }));

  it('a file shown in place of another before a frame came: the first one\'s frames come to nothing', () => withFramesHeld(async (page) => {
    await page.waitForFunction(() => window.rehearsal === 'ended', null, polling);
    await page.click('#open-example');
    await page.waitForFunction(() => document.querySelector('.file-item.selected')?.dataset.status === 'ready', null, polling);
    const before = await page.evaluate(() => window.heldFrames());
    const bytes = fs.readFileSync(path.join(ROOT, 'static/example.pickle'));
    await openFiles(page, tempFile('second.pickle', bytes));
    await page.waitForFunction(
      () => document.querySelector('.file-item.selected .file-name')?.textContent.includes('second')
        && document.querySelector('.file-item.selected')?.dataset.status === 'ready',
      null,
      polling,
    );
    assert.ok(before > 0 && await releaseFrames(page) > before, 'both files\' views asked for frames');
  }));
});

describe('a worker that cannot start', () => {
  it('says so for the file handed to it, and the page stays usable', async () => {
    const context = await app.browser.newContext();
    // The worker's WebAssembly is missing from the site (a broken deployment).
    await context.route('**/worker_bg.wasm', (route) => route.abort());
    try {
      const page = await context.newPage();
      await page.goto(app.server.url);
      await page.waitForSelector('#open-file');
      // The spare worker started with the page has already failed, before anyone listened.
      await page.waitForTimeout(500);
      await page.click('#open-example');
      assert.equal(await waitSettled(page), 'failed');
      assert.match(await page.textContent('#error-report .error-message'), /The decoding worker could not start/);
      assert.match(await page.textContent('#error-report .error-hint'), /missing files/);
      assert.equal(await page.isHidden('#panic-banner'), true);
      // The page stays usable: the file can be closed.
      await page.click('.file-item.selected .file-close');
      await page.waitForSelector('#welcome');
    } finally {
      await context.close();
    }
  });
});

describe('opening files', () => {
  it('"Open example" fetches the bundled example and shows its overview, with timing marks', async () => {
    const { context, page, requests, errors } = await app.open();
    try {
      const assetsLoaded = requests.length;
      await page.click('#open-example');
      assert.equal(await waitSettled(page), 'ready');
      const item = page.locator('.file-item.selected');
      assert.equal(await item.locator('.file-name').textContent(), 'example.pickle');
      const size = fs.statSync(path.join(DIST, 'example.pickle')).size;
      assert.ok(size > 0);

      const values = await metrics(page);
      assert.ok(Object.keys(values).length >= 5, `too few metrics: ${Object.keys(values)}`);
      for (const key of ['reserved-end-bytes', 'allocated-end-bytes', 'segment-count']) {
        assert.ok(key in values, `missing metric ${key}`);
      }
      assert.ok(values['allocated-end-bytes'] <= values['reserved-end-bytes']);
      // Numbers are human-formatted, the exact value is in data-value.
      const shown = await page.textContent('[data-metric="reserved-end-bytes"] dd');
      assert.match(shown, /^\d+(\.\d+)? (B|KiB|MiB|GiB|TiB)$/);

      await page.waitForFunction(() => performance.getEntriesByName('memsight:first-paint').length > 0);
      const [start] = await marks(page, 'memsight:file-start');
      const [decoded] = await marks(page, 'memsight:decoded');
      const [painted] = await marks(page, 'memsight:first-paint');
      assert.ok(start <= decoded && decoded <= painted, `marks out of order: ${start} ${decoded} ${painted}`);

      // After the site's own assets, the only requests are the example and the worker's files
      // (with the reading worker's, which the spare worker starts once warmed up).
      const later = requests.slice(assetsLoaded).map((url) => new URL(url).pathname.replace(/.*\//, ''));
      // (The browser may ask for the site's favicon again when the address's fragment follows
      // the view.)
      const allowed = new Set(['example.pickle', 'worker_loader.js', 'worker.js', 'worker_bg.wasm', 'reader.js']);
      const favicon = /^favicon-[0-9a-f]+\.svg$/;
      assert.ok(later.every((name) => allowed.has(name) || favicon.test(name)), `unexpected requests: ${later}`);
      assert.ok(later.includes('example.pickle'));
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('a page started plain (?startup=plain) rehearses nothing and starts no worker until a file comes, then shows the same numbers', async () => {
    const quick = await app.open({}, '');
    let expected;
    try {
      await quick.page.click('#open-example');
      assert.equal(await waitSettled(quick.page), 'ready');
      expected = await metrics(quick.page);
    } finally {
      await quick.context.close();
    }
    const { context, page, errors } = await app.open({}, '?startup=plain');
    try {
      const decodingWorkers = () => page.workers().filter((w) => w.url().includes('/worker_loader.js')).length;
      await page.waitForTimeout(1500);
      assert.equal(decodingWorkers(), 0, 'no worker started ahead of a file');
      assert.equal(await page.locator('.rehearsal').count(), 0, 'no rehearsal');
      await page.click('#open-example');
      assert.equal(await waitSettled(page), 'ready');
      assert.ok(page.workers().some((w) => w.url().endsWith('/worker_loader.js?startup=plain')));
      assert.deepEqual(await metrics(page), expected);
      // The timeline asked for its first frame itself: none came with the file.
      await page.waitForSelector('#timeline[data-first-frame="asked"]:not([data-frames-painted="0"])', { timeout: 30_000 });
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('opens several files at once side by side, lists them, switches between them and closes them', async () => {
    const { context, page } = await app.open();
    try {
      const example = path.join(DIST, 'example.pickle');
      const a = tempFile('first.pickle', fs.readFileSync(example));
      const b = tempFile('second.pickle', fs.readFileSync(example));
      await openFiles(page, [a, b]);
      // Beside each other, files are named by what tells them apart.
      assert.deepEqual(await page.$$eval('.file-name', (e) => e.map((n) => n.textContent)), ['first', 'second']);
      // Files opened together are shown side by side; a click on one shows its views.
      await page.waitForSelector('#files-view[data-rows="2"][data-waiting="0"]');
      assert.equal(await page.$$eval('.file-item.selected', (e) => e.length), 0);
      assert.match(await page.textContent('.file-item:nth-child(2) .file-size'), /KiB|MiB/);
      await page.click('.file-item:nth-child(2) .file-select');
      assert.equal(await waitSettled(page), 'ready');
      assert.equal(await page.textContent('.file-item.selected .file-name'), 'second');

      await page.click('.file-item:nth-child(1) .file-select');
      assert.equal(await waitSettled(page), 'ready');
      assert.equal(await page.textContent('#snapshot .file-title'), 'first.pickle');

      await page.click('.file-item:nth-child(1) .file-close');
      assert.deepEqual(await page.$$eval('.file-name', (e) => e.map((n) => n.textContent)), ['second.pickle']);
      assert.equal(await page.textContent('#snapshot .file-title'), 'second.pickle');
      await page.click('.file-item .file-close');
      await page.waitForSelector('#welcome');
    } finally {
      await context.close();
    }
  });
});

describe('real snapshots', () => {
  const haveFixtures = fs.existsSync(REAL_FIXTURES);
  const haveExpectations = fs.existsSync(EXPECTATIONS);
  const skip = !haveFixtures
    ? `real fixtures not found at ${REAL_FIXTURES}`
    : !haveExpectations
      ? `${path.relative(ROOT, EXPECTATIONS)} not found`
      : false;

  it('overview numbers match the expectations for every device of every real file', { skip, timeout: 300_000 }, async () => {
    const raw = JSON.parse(fs.readFileSync(EXPECTATIONS, 'utf8'));
    const expectations = raw.files ?? raw;
    const names = Object.keys(expectations).filter((name) => fs.existsSync(path.join(REAL_FIXTURES, name)));
    assert.ok(names.length > 0, 'no expectation names a file that exists');
    const { context, page, errors } = await app.open();
    const failures = [];
    try {
      for (const name of names) {
        await openFiles(page, path.join(REAL_FIXTURES, name));
        const status = await waitSettled(page);
        if (status !== 'ready') {
          failures.push(`${name}: ${status}: ${await page.$eval('#error-report', (e) => e.textContent).catch(() => '?')}`);
          await page.click('.file-item.selected .file-close');
          continue;
        }
        const devices = expectations[name].devices ?? expectations[name];
        const offered = await page.$$eval('#device-picker option', (o) => o.map((e) => e.value));
        const single = await page.$eval('#device-single', (e) => e.textContent).catch(() => null);
        for (const [device, expected] of Object.entries(devices)) {
          if (offered.length > 0) {
            if (!offered.includes(device)) {
              failures.push(`${name}: device ${device} is not offered (${offered})`);
              continue;
            }
            await page.selectOption('#device-picker', device);
          } else if (single !== `cuda:${device}`) {
            failures.push(`${name}: device ${device} is not shown (${single})`);
            continue;
          }
          await page.waitForSelector(`#overview[data-device="${device}"]`);
          failures.push(...metricMismatches(await metrics(page), expected, `${name} cuda:${device}`));
        }
        await page.click('.file-item.selected .file-close');
      }
      assert.deepEqual(failures, []);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });
});

/** The command line built by `cargo test` (`./x test` runs it first). */
const CLI = path.join(ROOT, 'target/debug/memsight');

/** The shown error report equals what `memsight overview --json` says of the same file. */
async function assertSameReportAsTheCommandLine(page, file) {
  if (!fs.existsSync(CLI)) {
    console.log(`# ${path.relative(ROOT, CLI)} not built: the command line's report is not compared`);
    return;
  }
  let stdout;
  try {
    stdout = execFileSync(CLI, ['overview', '--json', file], { stdio: ['ignore', 'pipe', 'ignore'] });
    assert.fail(`the command line accepted ${file}`);
  } catch (error) {
    if (error.code === 'ERR_ASSERTION') throw error;
    assert.equal(error.status, 1);
    stdout = error.stdout;
  }
  const { error: expected } = JSON.parse(stdout.toString());
  assert.equal((await page.textContent('#error-report .error-message')).trim(), expected.message);
  const offset = await page.$('#error-report .error-offset');
  assert.equal(offset && Number(await offset.getAttribute('data-offset')), expected.offset);
  const hint = await page.$('#error-report .error-hint');
  assert.equal(hint && (await hint.textContent()).trim(), expected.hint);
}

describe('bad files', () => {
  it('a truncated and a hostile file show their error while the first snapshot stays open', async () => {
    const { context, page, requests } = await app.open();
    try {
      const goodPath = path.join(DIST, 'example.pickle');
      const good = fs.readFileSync(goodPath);
      await openFiles(page, goodPath);
      assert.equal(await waitSettled(page), 'ready');
      const before = await metrics(page);

      const fixtures = path.join(ROOT, 'tests/fixtures');
      const truncated = fs.existsSync(path.join(fixtures, 'truncated.pickle'))
        ? path.join(fixtures, 'truncated.pickle')
        : tempFile('truncated.pickle', good.subarray(0, Math.floor(good.length / 2)));
      await openFiles(page, truncated);
      assert.equal(await waitSettled(page), 'failed');
      assert.ok((await page.textContent('#error-report .error-message')).trim().length > 0);
      const offset = await page.getAttribute('#error-report .error-offset', 'data-offset');
      assert.match(offset, /^\d+$/, 'a truncated file reports a byte offset');
      assert.equal(await page.getAttribute('.file-item.selected', 'data-status'), 'failed');

      await assertSameReportAsTheCommandLine(page, truncated);

      const hostileFixture = path.join(fixtures, 'hostile_os_system.pickle');
      for (const hostile of [tempFile('hostile.pickle', HOSTILE_PICKLE), ...(fs.existsSync(hostileFixture) ? [hostileFixture] : [])]) {
        await openFiles(page, hostile);
        assert.equal(await waitSettled(page), 'failed');
        const report = await page.textContent('#error-report');
        assert.match(report, /GLOBAL|REDUCE/, `the message names the refused opcode: ${report}`);
        assert.ok(await page.isVisible('#error-report .error-hint'), 'a hostile file gets a hint');
        await assertSameReportAsTheCommandLine(page, hostile);
      }

      // The first snapshot is intact.
      await page.click('.file-item:nth-child(1) .file-select');
      assert.equal(await waitSettled(page), 'ready');
      assert.deepEqual(await metrics(page), before);
      assert.equal(await page.isHidden('#panic-banner'), true);
      assert.ok(requests.every((url) => url.startsWith(app.server.url)), 'a request left the site');
    } finally {
      await context.close();
    }
  });
});

const GENERATOR = path.join(ROOT, 'tests/python/gen_snapshot.py');
const NO_GENERATOR = fs.existsSync(GENERATOR) ? false : 'tests/python/gen_snapshot.py not found';

/** A generated snapshot of `entries` trace entries from `seed`, made once per machine and reused. */
function generated(entries, seed) {
  const file = path.join(os.tmpdir(), `memsight-e2e-${entries / 1000}k-s${seed}.pickle`);
  if (!fs.existsSync(file)) {
    const partial = `${file}.${process.pid}.part`;
    execFileSync('python3', [GENERATOR, '--entries', String(entries), '--seed', String(seed), '--quiet', '-o', partial], { stdio: 'inherit' });
    fs.renameSync(partial, file);
  }
  return file;
}

describe('large files', () => {
  const skip = NO_GENERATOR;
  let big;

  before(() => {
    // About 49 MB, 20 s to make.
    if (!skip) big = generated(300_000, 1);
  });

  /**
   * The built site served on its own, its reading worker made to hold every part but the
   * first (parts may be read out of order) until `release()`: a large file's load then
   * certainly waits for parts, whatever the machine's speed (left to race, a busy machine's
   * page may hear of a load only once it is over). `released()`: whether the reading worker
   * was the gated one and saw the release.
   */
  async function gatedSite() {
    const dir = copyOfSite();
    const gate = `{
      const post = self.postMessage.bind(self);
      const held = [];
      let released = false;
      const poll = () => fetch('./release', { cache: 'no-store' }).then(
        (answer) => answer.ok ? (released = true, held.splice(0).forEach((args) => post(...args))) : setTimeout(poll, 10),
        () => setTimeout(poll, 10),
      );
      self.postMessage = (...args) => {
        if (released || args[0].offset === 0) return post(...args);
        if (held.push(args) === 1) poll();
      };
    }
`;
    fs.writeFileSync(path.join(dir, 'reader.js'), gate + fs.readFileSync(path.join(DIST, 'reader.js'), 'utf8'));
    const server = await serveStatic(dir, SUB_PATH);
    return {
      url: server.url,
      release: () => fs.writeFileSync(path.join(dir, 'release'), ''),
      released: () => server.requests.some((url) => url.endsWith('/release')),
      close: async () => {
        await server.close();
        fs.rmSync(dir, { recursive: true });
      },
    };
  }

  it('the page stays responsive while a large file loads', { skip, timeout: 180_000 }, async () => {
    // The load waits for its parts until the click below has happened.
    const site = await gatedSite();
    const context = await app.browser.newContext({ serviceWorkers: 'block' });
    try {
      const page = await context.newPage();
      const errors = recordErrors(page);
      await page.goto(site.url);
      await page.click('#open-example');
      assert.equal(await waitSettled(page), 'ready');
      const exampleValues = await metrics(page);

      // Heartbeat on the main thread; a click handler notes whether a load was in progress.
      await page.evaluate(() => {
        window.__gaps = [];
        let last = performance.now();
        window.__heartbeat = setInterval(() => {
          const now = performance.now();
          window.__gaps.push(now - last);
          last = now;
        }, 10);
        window.__clicksDuringLoad = 0;
        document.addEventListener('click', () => {
          if (document.querySelector('.file-item[data-status="loading"]')) window.__clicksDuringLoad += 1;
        }, true);
      });
      await page.setInputFiles('#file-input', big);
      await page.click('.file-item:nth-child(1) .file-select');
      await page.waitForSelector('#overview');
      assert.deepEqual(await metrics(page), exampleValues, 'the clicked file is shown while the other loads');
      assert.equal(await page.evaluate(() => window.__clicksDuringLoad), 1, 'the click happened during the load');

      site.release();
      await page.click('.file-item:nth-child(2) .file-select');
      const status = await waitSettled(page, 120_000);
      // Its own views, not the example's still on screen (its load may end before the click).
      await page.waitForFunction(() => document.querySelector('#snapshot')?.dataset.fileId
        === document.querySelector('.file-item:nth-child(2)').dataset.fileId);
      const maxGap = await page.evaluate(() => {
        clearInterval(window.__heartbeat);
        return Math.max(...window.__gaps);
      });
      assert.equal(status, 'ready', await page.textContent('#main'));
      assert.ok(site.released(), 'the reading worker was not the gated one');
      assert.ok(maxGap < 300, `the main thread was blocked for ${maxGap.toFixed(0)} ms`);
      const size = fs.statSync(big).size;
      assert.equal(await page.getAttribute('.file-item:nth-child(2)', 'data-status'), 'ready');
      assert.ok(size > 10_000_000);
      // Its thousands of record_function scopes are listed 30 at first, all on request.
      await page.waitForSelector('#scopes-table', { timeout: 60_000 });
      const total = Number(await page.getAttribute('#scopes-table', 'data-total'));
      assert.ok(total > 30, `only ${total} scopes`);
      assert.equal(await page.locator('#scopes-table .phase-row').count(), 30);
      await page.click('#scopes-table-all');
      await page.waitForFunction((n) => document.querySelectorAll('#scopes-table .phase-row').length === n, total);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
      await site.close();
    }
  });

  it('reads the same in parts by the reading worker and, on a site without it, by the decoding worker', { skip, timeout: 180_000 }, async () => {
    // The built site served on its own (every request reaches this server), whole or without
    // the reading worker's script (a broken deployment).
    const read = async (withoutReader) => {
      const dir = copyOfSite(withoutReader ? ['reader.js'] : []);
      const server = await serveStatic(dir, SUB_PATH);
      const context = await app.browser.newContext({ serviceWorkers: 'block' });
      try {
        const page = await context.newPage();
        const warnings = [];
        const errors = [];
        page.on('console', (message) => {
          if (message.type() === 'warning' && /reading worker/.test(message.text())) warnings.push(message.text());
          if (message.type() === 'error') errors.push(message.text());
        });
        await page.goto(server.url);
        await page.waitForSelector('#open-file');
        await openFiles(page, big);
        assert.equal(await waitSettled(page, 120_000), 'ready', await page.textContent('#main'));
        const reader = server.requests.some((url) => url.endsWith('/reader.js'));
        return { values: await metrics(page), warnings, errors, reader };
      } finally {
        await context.close();
        await server.close();
        fs.rmSync(dir, { recursive: true });
      }
    };
    assert.ok(fs.statSync(big).size > 40 * 1024 * 1024, 'the file comes in many 4 MiB parts');
    const ahead = await read(false);
    assert.ok(ahead.reader, 'the decoding worker started its reading worker');
    assert.deepEqual(ahead.warnings, []);
    assert.deepEqual(ahead.errors, []);
    assert.equal(ahead.values['trace-entries'], 300000n);
    const own = await read(true);
    assert.ok(own.warnings.some((w) => /reading worker cannot read the file/.test(w)), own.warnings.join('\n'));
    assert.deepEqual(own.values, ahead.values);
  });

  /**
   * The reading worker of the site at `url` on its own, as the decoding worker drives it
   * (src/worker/read_ahead.rs): nine and a half parts of a file whose every byte names its
   * part, four buffers, given back two, then three and one `taken` without its buffer, then
   * four. What it sent after each step, and each part.
   */
  async function driveReader(url) {
    const context = await app.browser.newContext({ serviceWorkers: 'block' });
    try {
      const page = await context.newPage();
      await page.goto(url);
      return await page.evaluate(async () => {
        const PART = 1024;
        const bytes = new Uint8Array(9.5 * PART).map((_, i) => Math.floor(i / PART));
        const file = new File([bytes], 'parts.bin');
        const worker = new Worker('reader.js');
        const parts = [];
        const unread = [];
        worker.onmessage = ({ data }) => {
          const part = data.buffer ? new Uint8Array(data.buffer, 0, data.length) : new Uint8Array();
          parts.push({ offset: data.offset, length: part.length, bufferBytes: data.buffer?.byteLength, names: [...new Set(part)], error: data.error });
          unread.push(data.buffer);
        };
        const giveBack = (n) => {
          for (const buffer of unread.splice(0, n)) worker.postMessage({ taken: true, buffer }, [buffer]);
        };
        // Long enough for any number of reads of a few bytes to come back.
        const settle = () => new Promise((done) => setTimeout(done, 400));
        const counts = [];
        worker.postMessage({ file, total: file.size, part: PART, buffers: 4 });
        await settle();
        counts.push(parts.length);
        giveBack(2);
        await settle();
        counts.push(parts.length);
        // A part taken whose buffer did not come back (detached elsewhere) frees its place too.
        giveBack(3);
        worker.postMessage({ taken: true });
        await settle();
        counts.push(parts.length);
        giveBack(4);
        await settle();
        counts.push(parts.length);
        worker.terminate();
        return { counts, parts: parts.sort((a, b) => a.offset - b.offset) };
      });
    } finally {
      await context.close();
    }
  }

  /** The parts `driveReader` hears, in order: part `n` in a buffer of `bufferBytes(n)` bytes. */
  const partsHeard = (bufferBytes) => Array.from({ length: 10 }, (_, n) => ({
    offset: n * 1024,
    length: n === 9 ? 512 : 1024,
    bufferBytes: bufferBytes(n),
    names: [n],
    error: undefined,
  }));

  it('the reading worker reads into the buffers it has, and reads on as they come back', async () => {
    const heard = await driveReader(app.server.url);
    assert.deepEqual(heard.counts, [4, 6, 10, 10], 'parts heard after each step');
    assert.deepEqual(heard.parts, partsHeard(() => 1024));
  });

  it('in a browser that cannot read a stream into a given buffer, the reading worker reads each part anew, as many at once', async () => {
    const dir = copyOfSite();
    const noByob = `{
      const getReader = ReadableStream.prototype.getReader;
      ReadableStream.prototype.getReader = function (options) {
        if (options?.mode === 'byob') throw new TypeError('no byob reader here');
        return getReader.call(this, options);
      };
    }
`;
    fs.writeFileSync(path.join(dir, 'reader.js'), noByob + fs.readFileSync(path.join(DIST, 'reader.js'), 'utf8'));
    const server = await serveStatic(dir, SUB_PATH);
    try {
      const heard = await driveReader(server.url);
      assert.deepEqual(heard.counts, [4, 6, 10, 10], 'parts heard after each step');
      // Each part in a buffer of its own size: read by Blob.arrayBuffer().
      assert.deepEqual(heard.parts, partsHeard((n) => (n === 9 ? 512 : 1024)));
    } finally {
      await server.close();
      fs.rmSync(dir, { recursive: true });
    }
  });

  it('a file changed on disk while it is read is that file\'s error, and the file open before it stays', { skip, timeout: 180_000 }, async () => {
    // The file is changed while its load certainly waits for parts.
    const site = await gatedSite();
    const context = await app.browser.newContext({ serviceWorkers: 'block' });
    const changing = path.join(os.tmpdir(), `memsight-e2e-changing-${process.pid}.pickle`);
    fs.copyFileSync(big, changing);
    try {
      const page = await context.newPage();
      await page.goto(site.url);
      await page.click('#open-example');
      assert.equal(await waitSettled(page), 'ready');
      const exampleValues = await metrics(page);
      await page.setInputFiles('#file-input', changing);
      await page.waitForFunction(() => Number(document.querySelector('#load-progress')?.dataset.bytesRead) > 0, null, { polling: 10 });
      // Changed once its first part is decoded: the browser then refuses to read the rest of
      // a picked file, as when a run overwrites the snapshot a user is opening.
      fs.appendFileSync(changing, Buffer.alloc(1));
      site.release();
      assert.equal(await waitSettled(page, 120_000), 'failed');
      assert.ok(site.released(), 'the reading worker was not the gated one');
      const message = (await page.textContent('#error-report .error-message')).trim();
      const at = /^The file could not be read at byte (\d+): /.exec(message);
      assert.ok(at, message);
      const part = 4 * 1024 * 1024;
      assert.equal(Number(at[1]) % part, 0, 'parts are read from their start');
      assert.ok(Number(at[1]) > 0 && Number(at[1]) < fs.statSync(big).size, message);
      assert.equal(await page.getAttribute('.file-item.selected', 'data-status'), 'failed');

      await page.click('.file-item:nth-child(1) .file-select');
      assert.equal(await waitSettled(page), 'ready');
      assert.deepEqual(await metrics(page), exampleValues);
      assert.equal(await page.isHidden('#panic-banner'), true);
    } finally {
      await context.close();
      await site.close();
      fs.rmSync(changing, { force: true });
    }
  });

  it('Cancel ends a load at once and the file is gone', { skip, timeout: 120_000 }, async () => {
    const { context, page } = await app.open();
    try {
      // Click Cancel the moment the progress view appears.
      await page.evaluate(() => {
        new MutationObserver((_, observer) => {
          const cancel = document.querySelector('#cancel-load');
          if (cancel) {
            window.__progressSeen = document.querySelector('#load-progress progress') !== null;
            cancel.click();
            observer.disconnect();
          }
        }).observe(document.body, { childList: true, subtree: true });
      });
      await page.setInputFiles('#file-input', big);
      await page.waitForSelector('#welcome');
      assert.equal(await page.evaluate(() => window.__progressSeen), true);
      assert.equal(await page.locator('.file-item').count(), 0);
      // The worker was ended: nothing is decoded later.
      await page.waitForTimeout(1500);
      assert.deepEqual(await marks(page, 'memsight:decoded'), []);
      assert.equal(await page.locator('.file-item').count(), 0);
    } finally {
      await context.close();
    }
  });
});

describe('a small file read from one stream', () => {
  const skip = NO_GENERATOR;
  const MIB = 1024 * 1024;
  let small;

  before(() => {
    if (!skip) small = generated(30_000, 2);
  });

  /** Opens `file` on the site at `url`: how it settled, its numbers, its error, the workers' warnings of how they read it, and the console's errors. */
  async function open(url, file) {
    const context = await app.browser.newContext({ serviceWorkers: 'block' });
    try {
      const page = await context.newPage();
      const warnings = [];
      const errors = recordErrors(page);
      page.on('console', (message) => {
        if (message.type() === 'warning' && /is read in slices|cannot read the file/.test(message.text())) warnings.push(message.text());
      });
      await page.goto(url);
      await page.waitForSelector('#open-file');
      await openFiles(page, file);
      const status = await waitSettled(page, 60_000);
      const error = status === 'failed' ? (await page.textContent('#error-report .error-message')).trim() : null;
      return { status, values: status === 'ready' ? await metrics(page) : null, error, warnings, errors };
    } finally {
      await context.close();
    }
  }

  it('reads the same where Blob streams cannot read into a given buffer (read in slices then)', { skip, timeout: 120_000 }, async () => {
    const size = fs.statSync(small).size;
    assert.ok(size > 3 * MIB && size <= 12 * MIB, `${size} bytes: several parts, and not the reading worker's`);
    const streamed = await open(app.server.url, small);
    assert.equal(streamed.status, 'ready', streamed.error);
    assert.deepEqual(streamed.warnings, []);
    assert.deepEqual(streamed.errors, []);
    assert.equal(streamed.values['trace-entries'], 30000n);

    const site = await siteWithWorkerPrelude(`self.ReadableStreamBYOBReader = class {
      constructor() { throw new TypeError('no byob reader here'); }
    };`);
    try {
      const sliced = await open(site.url, small);
      assert.equal(sliced.status, 'ready', sliced.error);
      assert.ok(sliced.warnings.some((w) => /cannot be read into buffers \(TypeError: no byob reader here\): it is read in slices/.test(w)), sliced.warnings.join('\n'));
      assert.deepEqual(sliced.errors, []);
      assert.deepEqual(sliced.values, streamed.values);
    } finally {
      await site.close();
    }
  });

  it('a stream that ends before the file does is that file\'s error, naming the part and the bytes', { skip, timeout: 120_000 }, async () => {
    // As when the file shrinks while it is read: its stream ends 100 bytes early (the
    // worker's own warm-up snapshot, under 1 MiB, is read whole).
    const site = await siteWithWorkerPrelude(`{
      const stream = Blob.prototype.stream;
      Blob.prototype.stream = function () { return stream.call(this.size > ${MIB} ? this.slice(0, this.size - 100) : this); };
    }`);
    try {
      const size = fs.statSync(small).size;
      const last = Math.floor(size / MIB) * MIB;
      const shrunk = await open(site.url, small);
      assert.equal(shrunk.status, 'failed');
      assert.equal(shrunk.error, `The file changed while it was read: ${size - last} bytes were asked for at byte ${last}, ${size - last - 100} came.`);
      assert.deepEqual(shrunk.errors, []);
    } finally {
      await site.close();
    }
  });

  it('a stream the browser stops reading is that file\'s error, at the part it stopped in', { skip, timeout: 120_000 }, async () => {
    // As when the file changes on disk while it is read: after its first MiB, the stream errs.
    const site = await siteWithWorkerPrelude(`{
      const stream = Blob.prototype.stream;
      Blob.prototype.stream = function () {
        const inner = stream.call(this).getReader();
        let sent = 0;
        return new ReadableStream({
          type: 'bytes',
          async pull(controller) {
            if (sent >= ${MIB}) return controller.error(new DOMException('the file changed', 'NotReadableError'));
            const { value, done } = await inner.read();
            if (done) return controller.close();
            const bytes = value.subarray(0, ${MIB} - sent);
            sent += bytes.length;
            controller.enqueue(bytes);
          },
        });
      };
    }`);
    try {
      const stopped = await open(site.url, small);
      assert.equal(stopped.status, 'failed');
      assert.equal(stopped.error, `The file could not be read at byte ${MIB}: NotReadableError: the file changed`);
      assert.deepEqual(stopped.errors, []);
    } finally {
      await site.close();
    }
  });
});

describe('files too large for the tab', () => {
  /**
   * A gzipped pickle whose top list holds `lists` lists of `millions` million integers each:
   * 1 byte per integer in the pickle (DUP), 16 bytes in the decoder, so a few hundred
   * kilobytes need gigabytes. Made in slices of a million (the decoder's stack holds 4M).
   */
  function growingPickle(name, lists, millions) {
    const slice = Buffer.concat([Buffer.from('(K\x01', 'latin1'), Buffer.alloc(999_999, '2'), Buffer.from('e')]);
    const parts = [Buffer.from('\x80\x04]', 'latin1')];
    for (let l = 0; l < lists; l++) {
      parts.push(Buffer.from(']'));
      for (let m = 0; m < millions; m++) parts.push(slice);
      parts.push(Buffer.from('a'));
    }
    parts.push(Buffer.from('.'));
    const gzip = zlib.createGzip({ level: 9 });
    const out = [];
    gzip.on('data', (chunk) => out.push(chunk));
    for (const part of parts) gzip.write(part);
    return new Promise((resolve) => {
      gzip.end(() => resolve(tempFile(name, Buffer.concat(out))));
    });
  }

  it("a model larger than WebAssembly's memory is the file's error, naming the limit and the command line", { timeout: 120_000 }, async () => {
    const { context, page, errors } = await app.open();
    try {
      await page.click('#open-example');
      assert.equal(await waitSettled(page), 'ready');
      const before = await metrics(page);

      // Five lists of 60M integers: 960 MB each, 4.7 GB in all; any one list stays under the
      // 2 GiB one allocation can hold, so the worker's memory itself runs out.
      await openFiles(page, await growingPickle('too-large.pickle.gz', 5, 60));
      assert.equal(await waitSettled(page, 100_000), 'failed');
      const message = await page.textContent('#error-report .error-message');
      assert.match(message, /^This file needs more memory than a browser gives one tab's WebAssembly worker \(4 GiB\): with \d+\.\d GiB in use, [\d.]+ [MG]iB more could not be had\.$/);
      assert.match(await page.textContent('#error-report .error-hint'), /command line is not held to the browser.s limit \(only to the machine.s memory\).*memsight overview FILE --json/);

      // One list of 160M integers would need one allocation past 2 GiB.
      await openFiles(page, await growingPickle('one-table.pickle.gz', 1, 160));
      assert.equal(await waitSettled(page, 100_000), 'failed');
      assert.match(
        await page.textContent('#error-report .error-message'),
        /\(4 GiB\): one of its tables would have grown past 2 GiB, the most one allocation can hold there \([\d.]+ [MG]iB in use\)\.$/,
      );
      assert.match(await page.textContent('#error-report .error-hint'), /memsight overview FILE --json/);

      // Neither is a crash, and the example is intact.
      assert.equal(await page.isHidden('#panic-banner'), true);
      assert.deepEqual(errors.filter((e) => !/panicked: .*capacity overflow/s.test(e) && !/unreachable/.test(e)), []);
      await page.click('.file-item:nth-child(1) .file-select');
      assert.equal(await waitSettled(page), 'ready');
      assert.deepEqual(await metrics(page), before);
    } finally {
      await context.close();
    }
  });
});

