//! The screen shown when no file is open: what memsight does, how to record a snapshot, and
//! the ways to open one.
//!
//! Static text plus the same open actions as the toolbar.

use leptos::prelude::*;

use super::actions::Actions;

#[component]
pub fn Welcome(actions: Actions) -> impl IntoView {
    view! {
        <section class="panel welcome" id="welcome">
            <h1 class="panel-title">"Open a PyTorch CUDA memory snapshot"</h1>
            <p>
                "Drop one or more "<code>".pickle"</code>" files anywhere on this page, or use "
                <strong>"Open snapshot…"</strong>". Files are decoded in your browser, in a background worker: nothing is uploaded."
            </p>
            <div class="welcome-actions">
                <button class="button" type="button" on:click=move |_| actions.open_example()>
                    "Open the example snapshot"
                </button>
            </div>
            <h2>"Recording a snapshot"</h2>
            <pre class="code"><code>
"import torch
# Start recording first, before the model and the optimizer are built:
# memory made before it has no stack, and its role can only be deduced.
torch.cuda.memory._record_memory_history(max_entries=100_000)
model = build_model().cuda()
optimizer = torch.optim.AdamW(model.parameters())
# … run a few training steps …
torch.cuda.memory._dump_snapshot(\"snapshot.pickle\")"
            </code></pre>
            <p class="hint" id="record-first-hint">"Start recording before building the model: then every parameter, gradient and optimizer state has the stack that made it. Pickles from PyTorch 2.0 to today are understood, gzipped or not."</p>
        </section>
    }
}
