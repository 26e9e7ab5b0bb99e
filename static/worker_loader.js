// The entry script of memsight's decoding worker (one per open file). It queues the messages
// that arrive while the WebAssembly module loads (memsight_web::worker replays them), then starts
// the module that Trunk built from src/bin/worker.rs. Paths are relative to this script, so the
// site works under any sub-path.
self.__memsightQueue = [];
let startError = null;
self.onmessage = (event) => {
  // A worker that could not start answers every message with why, so a file handed to it
  // (it may have been started ahead of need, before anyone listened) shows the error.
  if (startError === null) self.__memsightQueue.push(event);
  else reportStartError();
};

try {
  importScripts('./worker.js');
  wasm_bindgen({ module_or_path: './worker_bg.wasm' }).catch(fail);
} catch (error) {
  fail(error);
}

function fail(error) {
  startError = error;
  reportStartError();
}

function reportStartError() {
  // A failed file event: memsight_core::protocol::FromWorker::Event(FileEvent::Failed(..)).
  self.postMessage(JSON.stringify({
    event: {
      failed: {
        message: 'The decoding worker could not start: ' + startError,
        offset: null,
        hint: 'This browser may lack WebAssembly support, or the site is missing files.',
      },
    },
  }));
}
