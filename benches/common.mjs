// Shared by the browser benchmarks: command-line options, generated snapshot files (cached
// in target/bench-data/), the renderer processes' memory, medians.

import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

import { ROOT } from '../tests/e2e/helpers.mjs';

const args = process.argv.slice(2);
export const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
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

/** Resident memory (MiB) of all renderer processes: the page, its workers and their wasm. */
export function rendererMemoryMiB() {
  let kib = 0;
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmdline.includes('chromium') || !cmdline.includes('--type=renderer')) continue;
      const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
      kib += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    } catch {
      // The process ended while we looked.
    }
  }
  return kib / 1024;
}

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
export const mb = (bytes) => bytes / 1e6;
