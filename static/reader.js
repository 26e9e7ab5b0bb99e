// memsight's reading worker: it reads a File part by part for a decoding worker, which starts
// it, so the browser fills the next parts while the decoding worker's thread is busy
// decoding (a Blob read that thread starts only progresses when it is idle). Parts go back as
// transferred ArrayBuffers, tagged with their offset (reads may finish out of order); the
// decoding worker says when it took one, and at most `ahead` parts are read and not yet
// taken, so a large file is never held here whole. It decodes nothing (src/worker/read_ahead.rs
// is its other end).
let file = null;
let total = 0;
let part = 0;
let next = 0;
let credit = 0;

self.onmessage = ({ data }) => {
  if (data.file) {
    ({ file, total, part } = data);
    credit = data.ahead;
    next = 0;
  } else if (data.taken) {
    credit += data.taken;
  }
  read();
};

function read() {
  while (file !== null && credit > 0 && next < total) {
    const offset = next;
    const end = Math.min(total, offset + part);
    next = end;
    credit -= 1;
    file.slice(offset, end).arrayBuffer().then(
      (buffer) => self.postMessage({ offset, buffer }, [buffer]),
      (error) => self.postMessage({ offset, error: String(error) }),
    );
  }
}
