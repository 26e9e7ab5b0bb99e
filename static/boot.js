// Starts the memsight app. Trunk puts the hashed names of the app's JS and wasm files in the
// data attributes of the <script> tag that loads this module (see Trunk.toml), so the page
// needs no inline script and its Content-Security-Policy can forbid them.
//
// It also registers the service worker (sw.js) that lets the app start with no network, and
// offers a new version when one has been installed: the page is never switched silently.
const tag = document.querySelector('script[data-memsight-js]');
/** How often a page left open asks the server whether a new version was deployed. */
const UPDATE_CHECK_MS = 60 * 60 * 1000;

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

// Even a page that could not start registers: a fixed version reaches it as an update. Without
// a service worker the app works as before, online.
registerServiceWorker().catch((error) => {
  console.warn('memsight will not work offline: its service worker could not be registered:', error);
});

async function registerServiceWorker() {
  // Service workers need a secure context (https, or http on localhost); file:// has none.
  if (!('serviceWorker' in navigator) || !window.isSecureContext || !/^https?:$/.test(location.protocol)) {
    return;
  }
  const container = navigator.serviceWorker;
  // Relative to the page: its scope is the site's own directory, whatever the sub-path.
  const registration = await container.register(new URL('sw.js', document.baseURI));

  let reloadAsked = false;
  let controller = container.controller;
  container.addEventListener('controllerchange', () => {
    // A first visit's page is taken over by the version it was loaded with: nothing to say.
    const replaced = controller;
    controller = container.controller;
    if (reloadAsked) {
      location.reload();
    } else if (replaced) {
      // Another tab's Reload switched versions: this page still runs the old one.
      offerReload('memsight was updated in another tab', () => location.reload());
    }
  });

  const offerUpdate = () => {
    // On a first visit the installed version has nothing to replace: it starts by itself.
    if (container.controller === null) return;
    offerReload('A new version of memsight is available', () => {
      reloadAsked = true;
      // The new version takes over (then `controllerchange` reloads), unless it already has.
      if (registration.waiting) registration.waiting.postMessage('skip-waiting');
      else location.reload();
    });
  };
  if (registration.waiting) offerUpdate();
  registration.addEventListener('updatefound', () => {
    const installing = registration.installing;
    installing?.addEventListener('statechange', () => {
      if (installing.state === 'installed') offerUpdate();
    });
  });

  setInterval(() => registration.update().catch(() => {}), UPDATE_CHECK_MS);
}

/** Shows the update banner (index.html's #update-banner) with a Reload button and a dismiss. */
function offerReload(message, reload) {
  const banner = document.getElementById('update-banner');
  if (!banner) return;
  const text = document.createElement('span');
  text.className = 'update-message';
  text.textContent = message + ' —';
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'button primary';
  button.id = 'update-reload';
  button.textContent = 'Reload';
  button.addEventListener('click', () => {
    button.disabled = true;
    reload();
  });
  const dismiss = document.createElement('button');
  dismiss.type = 'button';
  dismiss.className = 'button quiet update-dismiss';
  dismiss.textContent = '×';
  dismiss.title = 'Not now';
  dismiss.setAttribute('aria-label', 'Not now');
  dismiss.addEventListener('click', () => {
    banner.hidden = true;
  });
  banner.replaceChildren(text, button, dismiss);
  banner.hidden = false;
}
