// memsight's reading worker: it reads a File part by part for a decoding worker, which starts
// it, so the browser fills the next parts while the decoding worker's thread is busy
// decoding (a Blob read that thread starts only progresses when it is idle). It decodes
// nothing (src/worker/read_ahead.rs is its other end).
//
// Each part is read into one of `buffers` ArrayBuffers of `part` bytes, which go to the
// decoding worker (transferred, tagged with the part's offset and length, since reads may
// finish out of order) and come back (transferred again, with `taken`) once it has decoded
// them: a file of any size is read into the same few buffers. A buffer the browser filled
// itself (`Blob.arrayBuffer()`) is only freed by its collector, which seldom runs while a
// file loads: a 1.1 GB file's load peaked at 1.4 GiB of page memory that way, 0.4 GiB with
// reused buffers, and read faster. Each part is a stream of its own slice, so the browser
// checks, as for any read of a picked file, that the file has not changed since it was picked.
let file = null;
let total = 0;
let part = 0;
let next = 0;
/** Buffers back from the decoding worker, to read the next parts into. */
let free = [];
/** Buffers not made yet (made on first use, so a small file never makes them all). */
let unmade = 0;
/** Whether this browser reads a Blob's stream into a given buffer ("byob"). */
let intoBuffers = true;

self.onmessage = ({ data }) => {
  if (data.file) {
    ({ file, total, part } = data);
    unmade = data.buffers;
    free = [];
    next = 0;
  } else if (data.taken) {
    if (data.buffer instanceof ArrayBuffer && data.buffer.byteLength === part) free.push(data.buffer);
    else unmade += 1;
  }
  readAhead();
};

function readAhead() {
  while (file !== null && next < total && (free.length > 0 || unmade > 0)) {
    const offset = next;
    const end = Math.min(total, offset + part);
    next = end;
    let buffer = free.pop();
    if (buffer === undefined) {
      unmade -= 1;
      buffer = intoBuffers ? new ArrayBuffer(part) : null;
    }
    readPart(file.slice(offset, end), buffer).then(
      (read) => self.postMessage({ offset, buffer: read, length: end - offset }, [read]),
      (error) => self.postMessage({ offset, error: String(error) }),
    );
  }
}

/** Reads all of `slice` into `buffer` (from its start), or into a new one where it cannot. */
async function readPart(slice, buffer) {
  let reader = null;
  if (intoBuffers && buffer !== null) {
    try {
      reader = slice.stream().getReader({ mode: 'byob' });
    } catch {
      intoBuffers = false;
    }
  }
  if (reader === null) return slice.arrayBuffer();
  let filled = 0;
  while (filled < slice.size) {
    const { value, done } = await reader.read(new Uint8Array(buffer, filled, slice.size - filled));
    if (done) throw new Error(`the file ended ${slice.size - filled} bytes early`);
    buffer = value.buffer;
    filled += value.byteLength;
  }
  reader.releaseLock();
  return buffer;
}
