// memsight's service worker: it keeps every file of the built site (the app shell) in a cache of
// its own version, so after a first visit the app starts and opens files with no network.
// It is not a cache of anything else: a snapshot a page fetches, or any file that is not part of
// the build, goes to the network untouched and is never stored.
//
// Versions: the manifest below lists every file of the build with its SHA-256 and is written by
// scripts/precache.sh when Trunk builds the site, so any change to any file changes this script
// and the browser installs the new version beside the running one. The new version waits until
// the page's "Reload" (static/boot.js) asks it to take over: a running page is never switched to
// new files under its feet (its next Web Worker would load a worker.js of another version).
//
// Pages are answered cache-first: the page, its hashed JS and wasm and its worker's files are
// one version, all from one cache, online or not; a newer deployment arrives as an update.

// precache:begin (written by scripts/precache.sh; a site built without it is never cached)
const VERSION = '';
const PRECACHE = [];
// precache:end

/** The site's directory: every path of the manifest is relative to it, as this script is. */
const SITE = new URL('./', self.location.href).href;
const INDEX = new URL('index.html', SITE).href;
/** SHA-256 (hex) of each file of this version, by absolute URL. */
const HASHES = new Map(PRECACHE.map(([path, sha256]) => [new URL(path, SITE).href, sha256]));
/** Caches are shared by the whole origin: names carry the site's directory, so copies of
 * memsight under different paths of one host never delete each other's files. */
const CACHE_PREFIX = `memsight ${SITE} `;
const CACHE = CACHE_PREFIX + VERSION;

self.addEventListener('install', (event) => {
  event.waitUntil(precache());
});

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    const names = await caches.keys();
    await Promise.all(names
      .filter((name) => name.startsWith(CACHE_PREFIX) && name !== CACHE)
      .map((name) => caches.delete(name)));
    // A first visit's page starts using the cache at once, so its next worker works offline.
    await self.clients.claim();
  })());
});

self.addEventListener('message', (event) => {
  if (event.data === 'skip-waiting') self.skipWaiting();
});

self.addEventListener('fetch', (event) => {
  const { request } = event;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  const key = request.mode === 'navigate' ? pageFor(url) : fileFor(url);
  if (key !== null) event.respondWith(fromCache(key, request));
});

/**
 * The cached file a navigation opens: the app's page for the site's directory or index.html,
 * whatever its query string (`index.html?embed=1&url=…`), or another file of the build.
 */
function pageFor(url) {
  const path = url.origin + url.pathname;
  if (path === SITE || path === INDEX) return INDEX;
  return HASHES.has(path) ? path : null;
}

/** The cached file a page or worker asks for: only a file of the build, with no query string. */
function fileFor(url) {
  if (url.search !== '') return null;
  const path = url.origin + url.pathname;
  return HASHES.has(path) ? path : null;
}

async function fromCache(key, request) {
  const cache = await caches.open(CACHE);
  // The browser may have evicted the cache: the network still has the files.
  return (await cache.match(key)) ?? fetch(request);
}

/** Fetches every file of this version, checks each against its hash, then stores them all. */
async function precache() {
  if (VERSION === '' || PRECACHE.length === 0) {
    throw new Error('sw.js has no manifest: build the site with Trunk (scripts/precache.sh)');
  }
  const files = await Promise.all([...HASHES].map(([url, sha256]) => fetchChecked(url, sha256)));
  const cache = await caches.open(CACHE);
  await Promise.all(files.map(({ url, response }) => cache.put(url, response)));
}

/**
 * A file whose bytes have the manifest's hash. The browser's HTTP cache is tried first (a first
 * visit has just downloaded the same files) and bypassed when it holds another version, as it
 * may for files whose names do not change (a CDN's or the browser's copy from before a deploy).
 */
async function fetchChecked(url, sha256) {
  let found = null;
  for (const mode of ['default', 'reload']) {
    const response = await fetch(url, { cache: mode, credentials: 'same-origin' });
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    const bytes = await response.arrayBuffer();
    found = hex(await crypto.subtle.digest('SHA-256', bytes));
    if (found === sha256) {
      // A fresh response: a redirected one could not answer a navigation.
      const type = response.headers.get('content-type');
      return { url, response: new Response(bytes, { headers: type ? { 'content-type': type } : {} }) };
    }
  }
  throw new Error(`${url} is not the file of version ${VERSION} (SHA-256 ${found}, expected ${sha256})`);
}

function hex(buffer) {
  return [...new Uint8Array(buffer)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}
