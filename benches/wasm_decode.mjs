// Decoder throughput compiled to WebAssembly and run by V8 (the engine of Chromium), outside
// the browser: builds examples/wasm_decode.rs for wasm32, binds it with wasm-bindgen, and
// decodes generated snapshots from target/bench-data/ (made by `cargo bench -p memsight-core --bench decode`
// or benches/browser.mjs). Prints the first decode in a fresh module (what a new worker does)
// and the median of warm decodes.
//
// Usage: node benches/wasm_decode.mjs [--sizes 100k,1M,3M] [--runs 5]

import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const sizes = option('--sizes', '100k,1M,3M').split(',').map((t) => Math.round(parseFloat(t) * ({ k: 1e3, m: 1e6 }[t.slice(-1).toLowerCase()] ?? 1)));
const runs = Number(option('--runs', '5'));

execFileSync('cargo', ['build', '--release', '--target', 'wasm32-unknown-unknown', '-p', 'memsight-web', '--example', 'wasm_decode'], { cwd: ROOT, stdio: 'inherit' });
const out = path.join(ROOT, 'target/wasm-decode-bench');
execFileSync('wasm-bindgen', ['--target', 'nodejs', '--out-dir', out, path.join(ROOT, 'target/wasm32-unknown-unknown/release/examples/wasm_decode.wasm')], { stdio: 'inherit' });
// wasm-bindgen's Node.js glue is CommonJS; the repository's package.json says "module".
fs.writeFileSync(path.join(out, 'package.json'), '{ "type": "commonjs" }\n');
const require = createRequire(import.meta.url);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log('| entries | file MB | first decode in a fresh module (MB/s) | warm decode, median (MB/s) | target |');
console.log('|---:|---:|---:|---:|---:|');
for (const entries of sizes) {
  const dir = path.join(ROOT, 'target/bench-data');
  const name = fs.existsSync(dir) && fs.readdirSync(dir).find((f) => f.startsWith(`snapshot-${entries}-seed1-`));
  if (!name) {
    console.log(`| ${entries} | – | not generated (run cargo bench -p memsight-core --bench decode -- --sizes ${entries}) | | |`);
    continue;
  }
  const bytes = fs.readFileSync(path.join(dir, name));
  // A fresh copy of the module for the cold run, as each browser worker has.
  delete require.cache[require.resolve(path.join(out, 'wasm_decode.js'))];
  const wasm = require(path.join(out, 'wasm_decode.js'));
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    if (wasm.decode_rows(bytes) < 0) throw new Error(`${name} did not decode`);
    times.push(performance.now() - t);
  }
  const mbps = (ms) => (bytes.length / 1e6 / (ms / 1000)).toFixed(0);
  const warm = median(times.slice(1));
  console.log(`| ${entries.toLocaleString('en')} | ${(bytes.length / 1e6).toFixed(1)} | ${mbps(times[0])} | ${mbps(warm)} | ≥ 200 ${warm > 0 && bytes.length / 1e3 / warm >= 200 ? '✓' : '✗'} |`);
}
