// A worker's memory for one file compiled to WebAssembly and run by V8 (the engine of
// Chromium), outside the browser: builds examples/wasm_load.rs for wasm32, binds it with
// wasm-bindgen, pushes each file in the worker's 4 MiB parts and prints, step by step, the
// time, the module's memory (a WebAssembly memory never shrinks: the tab keeps its highest)
// and the heap held after the step and at most during it. The module's memory above the heap
// is memory freed in holes too small for what came next.
//
// Usage: node benches/wasm_memory.mjs FILE... (the generated snapshots are in
// target/bench-data/ once benches/browser.mjs has run)

import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: node benches/wasm_memory.mjs FILE...');
  process.exit(2);
}

execFileSync('cargo', ['build', '--release', '--target', 'wasm32-unknown-unknown', '-p', 'memsight-web', '--example', 'wasm_load'], { cwd: ROOT, stdio: 'inherit' });
const out = path.join(ROOT, 'target/wasm-load-bench');
execFileSync('wasm-bindgen', ['--target', 'nodejs', '--out-dir', out, path.join(ROOT, 'target/wasm32-unknown-unknown/release/examples/wasm_load.wasm')], { stdio: 'inherit' });
// wasm-bindgen's Node.js glue is CommonJS; the repository's package.json says "module".
fs.writeFileSync(path.join(out, 'package.json'), '{ "type": "commonjs" }\n');
const require = createRequire(import.meta.url);
const PART = 4 << 20;

for (const file of files) {
  // A fresh module per file, as each browser worker has.
  delete require.cache[require.resolve(path.join(out, 'wasm_load.js'))];
  const { Load } = require(path.join(out, 'wasm_load.js'));
  const size = fs.statSync(file).size;
  const load = new Load(size);
  const fd = fs.openSync(file, 'r');
  const part = Buffer.alloc(PART);
  for (let offset = 0; offset < size;) {
    const read = fs.readSync(fd, part, 0, PART, offset);
    if (!load.push(part.subarray(0, read))) break;
    offset += read;
  }
  fs.closeSync(fd);
  console.log(`\n${path.basename(file)} (${(size / 1e6).toFixed(1)} MB)\n`);
  console.log('| step | ms | module memory (MiB) | heap held (MiB) | heap at most (MiB) |');
  console.log('|---|---:|---:|---:|---:|');
  for (const line of load.finish().split('\n')) {
    const [name, ...numbers] = line.split('\t');
    console.log(`| ${name} | ${numbers.join(' | ')} |`);
  }
}
