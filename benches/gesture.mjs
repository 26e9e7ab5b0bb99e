// The scripted zoom-and-pan gesture the browser benchmarks play on the timeline, one input per
// animation frame, with what it measures (frame latency, the worker's paint time, the page's
// animation frames). Passed to page.evaluate: it runs in the page and imports nothing.

/**
 * Runs in the page: one input per animation frame — along x (`axis` 'x'): zoom in around the
 * peak with the wheel, pan with D/A keys, zoom back out; along the bytes ('y'): Shift+wheel
 * zooms in, ↑/↓ pan — recording animation-frame intervals and, for each frame put on screen,
 * the time since the input that asked for it and the worker's paint time.
 */
export async function gesture({ count, axis }) {
  const canvas = document.querySelector('#timeline-canvas');
  const root = document.querySelector('#timeline');
  const frame = document.querySelector('#timeline-frame');
  const rect = canvas.getBoundingClientRect();
  const ticks = [];
  const latencies = [];
  const paints = [];
  let lastInput = null;
  const overlay = document.querySelector('#timeline-overlay');
  const overlays = [];
  const observer = new MutationObserver(() => {
    if (lastInput !== null) {
      latencies.push(performance.now() - lastInput);
      lastInput = null;
    }
    paints.push(Number(frame.dataset.paintMs));
    overlays.push(Number(overlay.dataset.overlayMs));
  });
  observer.observe(root, { attributes: true, attributeFilter: ['data-frames-painted'] });
  const peakX = () => {
    const start = Number(root.dataset.viewStart);
    const end = Number(root.dataset.viewEnd);
    const peak = Number(root.dataset.peakState);
    const f = (peak - start) / (end - start);
    return rect.left + rect.width * Math.min(0.95, Math.max(0.05, f));
  };
  const step = (i) => {
    const third = count / 3;
    if (axis === 'y') {
      // Zoom the bytes in around the middle of the plot, then move along them.
      if (i < count / 2) {
        canvas.dispatchEvent(new WheelEvent('wheel', { deltaY: -120, shiftKey: true, clientX: rect.left + rect.width / 2, clientY: rect.top + rect.height * 0.7, bubbles: true, cancelable: true }));
      } else {
        const key = Math.floor(i / 10) % 2 ? 'ArrowUp' : 'ArrowDown';
        window.dispatchEvent(new KeyboardEvent('keydown', { key, bubbles: true }));
      }
      return;
    }
    if (i < third) {
      canvas.dispatchEvent(new WheelEvent('wheel', { deltaY: -120, clientX: peakX(), clientY: rect.top + rect.height / 2, bubbles: true, cancelable: true }));
    } else if (i < 2 * third) {
      const key = Math.floor(i / 10) % 2 ? 'a' : 'd';
      window.dispatchEvent(new KeyboardEvent('keydown', { key, bubbles: true }));
    } else {
      canvas.dispatchEvent(new WheelEvent('wheel', { deltaY: 120, clientX: rect.left + rect.width / 2, clientY: rect.top + rect.height / 2, bubbles: true, cancelable: true }));
    }
  };
  await new Promise((resolve) => {
    let i = 0;
    let previous = null;
    const tick = (now) => {
      if (previous !== null) ticks.push(now - previous);
      previous = now;
      if (i >= count) {
        resolve();
        return;
      }
      if (lastInput === null) lastInput = performance.now();
      step(i++);
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  await new Promise((r) => setTimeout(r, 300));
  observer.disconnect();
  return { ticks, latencies, paints, overlays };
}

