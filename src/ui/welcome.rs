//! The screen shown when no file is open: what memsight does, how to record a snapshot, and
//! the ways to open one.
//!
//! Static text plus the same open actions as the toolbar, and, when the page was opened with a
//! link to a view, what that view is and that it needs its snapshot opened (links carry no
//! data, so a link to a file opened from disk opens on this screen).

use leptos::prelude::*;

use super::actions::use_actions;
use super::deep_link::DeepLink;

#[component]
pub fn Welcome( link: DeepLink) -> impl IntoView {
    let actions = use_actions();

    view! {
        <section class="panel welcome" id="welcome">
            {move || link.waiting().map(|waiting| view! {
                <p class="link-waiting" id="link-waiting" role="status">
                    "This link holds a view of a snapshot — " <strong>{waiting.words()}</strong>
                    " — but not the snapshot itself: links never carry a file's data. Open the snapshot the link was made from (drop it here or use "
                    <strong>"Open snapshot…"</strong> ") and the view opens on it."
                </p>
            })}
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
