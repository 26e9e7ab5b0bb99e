// Takes the README's screenshot (docs/screenshot.png): the built site in headless Chromium
// with the bundled example open, its timeline drawn and an allocation at the peak hovered.
// Run with `./x screenshot` (after a build).
// Usage: node tests/e2e/screenshot.mjs [output.png] [--dark]
import path from 'node:path';

import { ROOT, launchBrowser, openApp, startServer, waitSettled } from './helpers.mjs';

const args = process.argv.slice(2);
const dark = args.includes('--dark');
const output = path.resolve(args.find((a) => !a.startsWith('--')) ?? path.join(ROOT, 'docs/screenshot.png'));

const server = await startServer();
const browser = await launchBrowser();
try {
  const { page } = await openApp(browser, server);
  await page.setViewportSize({ width: 1366, height: 900 });
  await page.emulateMedia({ colorScheme: dark ? 'dark' : 'light' });
  await page.click('#open-example');
  if ((await waitSettled(page)) !== 'ready') throw new Error('the example did not open');
  await page.waitForFunction(() => Number(document.querySelector('#timeline')?.dataset.framesPainted) > 0);
  // Hover the peak's column a little above the bottom, as a user exploring it would.
  const { peak, box } = await page.evaluate(() => {
    const t = document.querySelector('#timeline').dataset;
    const r = document.querySelector('#timeline-canvas').getBoundingClientRect();
    return { peak: (Number(t.peakState) - Number(t.viewStart)) / (Number(t.viewEnd) - Number(t.viewStart)), box: r.toJSON() };
  });
  await page.mouse.move(box.x + box.width * peak + 1, box.y + box.height * 0.8);
  await page.waitForSelector('#timeline-tooltip');
  await page.waitForTimeout(300);
  await page.screenshot({ path: output, fullPage: false });
  console.log(`wrote ${path.relative(process.cwd(), output)}`);
} finally {
  await browser.close();
  await server.close();
}
