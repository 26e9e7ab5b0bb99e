// A tiny static file server for the end-to-end tests: serves dist/ on 127.0.0.1 under a
// sub-path (as GitHub Pages does), with the MIME types browsers need (application/wasm), and
// records every request it receives.
import http from 'node:http';
import fs from 'node:fs/promises';
import path from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
  '.pickle': 'application/octet-stream',
};

/**
 * Serves `root` at http://127.0.0.1:<free port><prefix>. Returns { origin, url, requests, close }.
 * Options: `headers` added to every answer (e.g. CORS headers), `slow` a path suffix whose
 * answers are sent in 64 KiB chunks `chunkDelayMs` apart (to catch a download in progress).
 */
export async function serveStatic(root, prefix = '/', options = {}) {
  const requests = [];
  const { headers = {}, slow = null, chunkDelayMs = 50 } = options;
  const server = http.createServer(async (req, res) => {
    requests.push(req.url);
    const url = new URL(req.url, 'http://localhost');
    if (!url.pathname.startsWith(prefix)) {
      res.writeHead(404, headers).end('not found');
      return;
    }
    let rel = decodeURIComponent(url.pathname.slice(prefix.length));
    if (rel === '' || rel.endsWith('/')) rel += 'index.html';
    const file = path.join(root, rel);
    if (!file.startsWith(root + path.sep)) {
      res.writeHead(403, headers).end('forbidden');
      return;
    }
    let body;
    try {
      body = await fs.readFile(file);
    } catch {
      res.writeHead(404, headers).end('not found');
      return;
    }
    res.writeHead(200, {
      'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
      'content-length': String(body.length),
      'cache-control': 'no-store',
      ...headers,
    });
    if (slow && url.pathname.endsWith(slow)) {
      for (let at = 0; at < body.length && !res.destroyed; at += 65536) {
        res.write(body.subarray(at, at + 65536));
        await new Promise((resolve) => setTimeout(resolve, chunkDelayMs));
      }
      res.end();
    } else {
      res.end(body);
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;
  return {
    origin,
    url: origin + prefix,
    requests,
    // Stops at once: kept-alive connections are closed too, so the site is really gone.
    close: () => new Promise((resolve) => {
      server.close(resolve);
      server.closeAllConnections();
    }),
  };
}
