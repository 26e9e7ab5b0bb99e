// An example host page for an embedded memsight viewer (embed-example.html): hands the viewer
// a snapshot by postMessage and lists what the viewer reports. Copy it into your own pages;
// the messages are described in memsight's guide (docs/guide.md, "Embedding in a page").
const frame = document.getElementById('viewer');
// Messages go to, and are only taken from, the viewer's origin.
const viewerOrigin = new URL(frame.src, document.baseURI).origin;
const events = document.getElementById('events');

window.addEventListener('message', (event) => {
  if (event.source !== frame.contentWindow || event.origin !== viewerOrigin) return;
  const message = event.data;
  if (!message || typeof message.type !== 'string' || !message.type.startsWith('memsight:')) return;
  show(message);
});

/** Lists a message from the viewer (as text: names come from the file). */
function show(message) {
  const item = document.createElement('li');
  item.className = 'event';
  item.dataset.type = message.type;
  let text = message.type;
  switch (message.type) {
    case 'memsight:loaded': {
      const peak = message.metrics['peak-allocated-bytes'];
      item.dataset.peak = String(peak);
      text += `: ${message.name}, cuda:${message.device}, peak ${(peak / 2 ** 20).toFixed(1)} MiB`;
      break;
    }
    case 'memsight:failed':
      text += `: ${message.name}: ${message.message}`;
      break;
    case 'memsight:selection':
      item.dataset.allocation = message.allocation === null ? '' : String(message.allocation);
      text += message.allocation === null ? ': nothing selected' : `: allocation ${message.allocation}`;
      break;
    case 'memsight:view':
      item.dataset.view = message.view;
      text += `: #${message.view}`;
      break;
    case 'memsight:error':
      text += `: ${message.message}`;
      break;
  }
  item.textContent = text;
  events.append(item);
}

/** Hands the viewer a snapshot's bytes (moved, not copied) and, optionally, a view. */
function open(name, buffer, view) {
  frame.contentWindow.postMessage({ type: 'memsight:open', name, bytes: buffer, view }, viewerOrigin, [buffer]);
}

document.getElementById('send-example').addEventListener('click', async () => {
  const response = await fetch('example.pickle');
  open('example.pickle', await response.arrayBuffer(), 'colour=role');
});

document.getElementById('host-file').addEventListener('change', async (event) => {
  const file = event.target.files[0];
  if (file) open(file.name, await file.arrayBuffer());
});

document.getElementById('colour-component').addEventListener('click', () => {
  frame.contentWindow.postMessage({ type: 'memsight:view', view: 'colour=component' }, viewerOrigin);
});
