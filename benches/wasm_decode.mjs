// Decoder throughput compiled to WebAssembly and run by V8 (the engine of Chromium), outside
// the browser: builds examples/wasm_decode.rs for wasm32, binds it with wasm-bindgen, and
// decodes generated snapshots from target/bench-data/ (made by `cargo bench -p memsight-core --bench decode`
// or benches/browser.mjs). Prints the first decode in a fresh module (what a new worker does)
// and the median of warm decodes. `--files` decodes given files instead; `--against DIR` also
// decodes each with another build's module (DIR: that checkout's target/wasm-decode-bench, left
// by this script run there), alternately run by run, so both see the same machine.
//
// Usage: node benches/wasm_decode.mjs [--sizes 100k,1M,3M] [--files A,B] [--runs 5] [--against DIR]

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
const builds = [['this build', out], ...(option('--against') ? [[option('--against'), path.resolve(option('--against'))]] : [])];
const generated = (entries) => {
  const dir = path.join(ROOT, 'target/bench-data');
  const name = fs.existsSync(dir) && fs.readdirSync(dir).find((f) => f.startsWith(`snapshot-${entries}-seed1-`));
  return name ? path.join(dir, name) : undefined;
};
const cases = option('--files')
  ? option('--files').split(',').map((file) => [path.basename(file), file])
  : sizes.map((entries) => [entries.toLocaleString('en'), generated(entries), entries]);
console.log('| file | build | file MB | first decode in a fresh module (MB/s) | warm decode, median (ms) | warm decode, median (MB/s) | target |');
console.log('|---|---|---:|---:|---:|---:|---:|');
for (const [label, file, entries] of cases) {
  if (!file) {
    console.log(`| ${label} | – | – | not generated (run cargo bench -p memsight-core --bench decode -- --sizes ${entries}) | | | |`);
    continue;
  }
  const bytes = fs.readFileSync(file);
  // A fresh copy of each module for the cold run, as each browser worker has.
  const modules = builds.map(([, dir]) => {
    delete require.cache[require.resolve(path.join(dir, 'wasm_decode.js'))];
    return require(path.join(dir, 'wasm_decode.js'));
  });
  const times = builds.map(() => []);
  for (let i = 0; i < runs; i++) {
    modules.forEach((wasm, b) => {
      const t = performance.now();
      if (wasm.decode_rows(bytes) < 0) throw new Error(`${file} did not decode`);
      times[b].push(performance.now() - t);
    });
  }
  const mbps = (ms) => (bytes.length / 1e6 / (ms / 1000)).toFixed(0);
  builds.forEach(([name], b) => {
    const warm = median(times[b].slice(1));
    console.log(`| ${label} | ${name} | ${(bytes.length / 1e6).toFixed(1)} | ${mbps(times[b][0])} | ${warm.toFixed(0)} | ${mbps(warm)} | ≥ 200 ${warm > 0 && bytes.length / 1e3 / warm >= 200 ? '✓' : '✗'} |`);
  });
}
