// Starts the memsight app. Trunk puts the hashed names of the app's JS and wasm files in the
// data attributes of the <script> tag that loads this module (see Trunk.toml), so the page
// needs no inline script and its Content-Security-Policy can forbid them.
const tag = document.querySelector('script[data-memsight-js]');

function showStartupError(error) {
  console.error(error);
  const banner = document.getElementById('panic-banner');
  if (banner) {
    banner.textContent = 'memsight could not start: ' + error +
      '. It needs a browser with WebAssembly support (Chrome, Edge, Firefox or Safari from 2022 on).';
    banner.hidden = false;
  }
}

try {
  const base = document.baseURI;
  const app = await import(new URL(tag.dataset.memsightJs, base).href);
  await app.default({ module_or_path: new URL(tag.dataset.memsightWasm, base) });
} catch (error) {
  showStartupError(error);
}
