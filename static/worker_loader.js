// The entry script of memsight's decoding worker (one per open file). It queues the messages
// that arrive while the WebAssembly module loads (memsight::worker replays them), then starts
// the module that Trunk built from src/bin/worker.rs. Paths are relative to this script, so the
// site works under any sub-path.
self.__memsightQueue = [];
self.onmessage = (event) => self.__memsightQueue.push(event);

try {
  importScripts('./worker.js');
  wasm_bindgen({ module_or_path: './worker_bg.wasm' }).catch(fail);
} catch (error) {
  fail(error);
}

function fail(error) {
  // A failed file event: memsight_core::protocol::FromWorker::Event(FileEvent::Failed(..)).
  self.postMessage(JSON.stringify({
    event: {
      failed: {
        message: 'The decoding worker could not start: ' + error,
        offset: null,
        hint: 'This browser may lack WebAssembly support, or the site is missing files.',
      },
    },
  }));
}
