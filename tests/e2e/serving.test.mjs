// End-to-end tests of a serving engine's memory (dist/) in Debian's headless Chromium, on a
// vLLM v1 worker with sleep mode (tests/fixtures/vllm_sleep_mode.pickle, written from vLLM
// 0.11.0's call sites by tests/python/make_edge_fixtures.py): each private pool has a timeline
// of its own, its blocks inside its reserved envelope; a block of the KV cache pins with its
// role and the frame that decided it; the table groups by pool and its rows carry their pool.
//
// Run with `./x test` or `node --test tests/e2e/serving.test.mjs`.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';

import { openFiles, ROOT, sharedBrowser, waitSettled } from './helpers.mjs';

const FILE = path.join(ROOT, 'tests/fixtures/vllm_sleep_mode.pickle');
const WAIT = 30_000;
const MIB = 1024 * 1024;
/** One layer's KV cache: 2 × 3,000 blocks × 16 tokens × 8 heads × 128 × 2 bytes. */
const KV_LAYER = 2 * 3000 * 16 * 8 * 128 * 2;
/** The segment each is in, rounded to 2 MiB. */
const KV_SEGMENT = Math.ceil(KV_LAYER / (2 * MIB)) * 2 * MIB;

const shared = sharedBrowser();

const dataset = (page, selector) => page.$eval(selector, (e) => ({ ...e.dataset }));

async function waitAttr(page, selector, name, value, what) {
  try {
    await page.waitForFunction(
      ([selector, name, value]) => document.querySelector(selector)?.getAttribute(name) === value,
      [selector, name, value],
      { timeout: WAIT },
    );
  } catch {
    const got = await page.$eval(selector, (e, n) => e.getAttribute(n), name).catch(() => '(no element)');
    assert.fail(`${what}: ${selector} ${name} is ${JSON.stringify(got)}, expected ${JSON.stringify(value)}`);
  }
}

/** Page coordinates of a point of the canvas, as fractions of its width and height. */
async function canvasAt(page, fx, fy) {
  const r = await page.$eval('#timeline-canvas', (c) => {
    const b = c.getBoundingClientRect();
    return { left: b.left, top: b.top, width: b.width, height: b.height };
  });
  return { x: r.left + fx * r.width, y: r.top + fy * r.height };
}

async function open() {
  const app = await shared.open({ viewport: { width: 1400, height: 900 } });
  await openFiles(app.page, FILE);
  assert.equal(await waitSettled(app.page), 'ready');
  await app.page.waitForSelector('#timeline[data-ready="true"]', { timeout: WAIT });
  return app;
}

describe('a serving engine with sleep mode', () => {
  it('shows each private pool as a timeline of its blocks inside its envelope, and pins a KV-cache block', async () => {
    const { page, context } = await open();
    try {
      // A tab per pool, named by what it holds.
      await page.waitForSelector('[id^="timeline-tab-pool-"]', { timeout: WAIT });
      const tabs = await page.$$eval('[id^="timeline-tab-pool-"]', (bs) =>
        bs.map((b) => ({ id: b.id, pool: b.dataset.pool, text: b.textContent })),
      );
      assert.deepEqual(tabs.map((t) => t.pool), ['0,1', '0,2', '0,3']);
      const kvTab = tabs.find((t) => t.pool === '0,2');
      assert.match(kvTab.text, /KV cache/);
      assert.match(tabs.find((t) => t.pool === '0,3').text, /CUDA graph/);
      assert.match(tabs.find((t) => t.pool === '0,1').text, /Parameters/);

      // The KV cache's pool: its two layers' tensors, its envelope their two segments.
      await page.click(`#${kvTab.id}`);
      await waitAttr(page, '#timeline', 'data-kind', 'pool', 'the pool tab shows a pool');
      await waitAttr(page, '#timeline', 'data-pool', '0,2', 'the pool tab shows its pool');
      await waitAttr(page, '#timeline', 'data-elements', '2', 'the pool holds its two blocks');
      await waitAttr(page, '#timeline', 'data-peak-bytes', String(2 * KV_LAYER), 'the pool peaks at its blocks');

      // Near the end, just above the bottom edge: the first layer's tensor.
      const p = await canvasAt(page, 0.97, 0.93);
      await page.mouse.move(p.x, p.y);
      await page.waitForSelector('#timeline-tooltip[data-index]', { timeout: WAIT });
      const tip = await dataset(page, '#timeline-tooltip');
      assert.equal(Number(tip.size), KV_LAYER, 'the hovered block is a layer of the cache');
      assert.equal(Number(tip.total), 2 * KV_LAYER, 'the pool allocates both layers');
      assert.equal(Number(tip.line), 2 * KV_SEGMENT, "the envelope is the pool's reserved bytes");
      await page.mouse.click(p.x, p.y);
      await page.waitForSelector('#pinned', { timeout: WAIT });
      const role = await dataset(page, '#pinned-role');
      assert.equal(role.role, 'kv_cache');
      assert.equal(role.inferred, 'false');
      const why = await page.textContent('#pinned-role');
      assert.match(why, /_allocate_kv_cache_tensors/, 'the reason names the frame that decided it');
      assert.match(why, /vLLM v1/);

      // Back on the allocations timeline, the same cache is there with the rest.
      await page.click('#timeline-tab-allocations');
      await waitAttr(page, '#timeline', 'data-kind', 'allocations', 'back to every allocation');
    } finally {
      await context.close();
    }
  });

  it('groups the table by pool and gives every row its pool', async () => {
    const { page, context } = await open();
    try {
      await page.waitForSelector('#table-group-by', { timeout: WAIT });
      await page.selectOption('#table-group-by', 'pool');
      await page.waitForSelector('.table-grid .tr.group', { timeout: WAIT });
      const groups = await page.$$eval('.table-grid .tr.group', (rows) => rows.map((r) => r.textContent));
      assert.ok(groups.some((g) => /Pool \(0, 2\), memory pool/.test(g)), JSON.stringify(groups));
      assert.ok(groups.some((g) => /Pool \(0, 3\), CUDA graph/.test(g)), JSON.stringify(groups));
      assert.ok(groups.some((g) => /Default pool/.test(g)), JSON.stringify(groups));
    } finally {
      await context.close();
    }
  });
});
