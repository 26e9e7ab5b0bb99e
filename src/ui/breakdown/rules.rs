//! The user's category rules: ordered keyword or regex patterns over an allocation's frames
//! (`file:line:function`) that set its role and/or component before any inference. Add,
//! rename, edit, reorder, delete, reset; export and import as JSON. Applying sends them to the
//! worker, which categorises again; every view follows. Kept in `localStorage` once the worker
//! accepts them; a rule it refuses is named with the reason and nothing changes.

use leptos::prelude::*;
use wasm_bindgen::JsCast;

use crate::analysis::categories::rules::{Rule, Rules};
use crate::analysis::categories::{Component, Role};
use crate::format;
use crate::ui::file_context::use_file;

fn select_value(event: &leptos::ev::Event) -> String {
    event
        .target()
        .and_then(|t| t.dyn_into::<web_sys::HtmlSelectElement>().ok())
        .map(|s| s.value())
        .unwrap_or_default()
}

#[component]
pub fn RuleEditor() -> impl IntoView {
    let cx = use_file();

    // The rules being edited: the ones in use until the user changes something.
    let draft = RwSignal::new(cx.rules.get_untracked());
    Effect::new(move |_| draft.set(cx.rules.get()));
    let import_error = RwSignal::new(None::<String>);
    let edit = move |i: usize, change: Box<dyn FnOnce(&mut Rule)>| {
        draft.update(|d| {
            if let Some(rule) = d.rules.get_mut(i) {
                change(rule)
            }
        })
    };
    let changed = move || draft.with(|d| cx.rules.with(|r| d != r));
    let file_input = NodeRef::<leptos::html::Input>::new();
    let on_import = move |_| {
        let Some(file) = file_input
            .get_untracked()
            .and_then(|i| i.files())
            .and_then(|f| f.get(0))
        else {
            return;
        };
        let text = file.text();
        leptos::task::spawn_local(async move {
            let text = wasm_bindgen_futures::JsFuture::from(text)
                .await
                .ok()
                .and_then(|t| t.as_string())
                .unwrap_or_default();
            match serde_json::from_str::<Rules>(&text) {
                Ok(rules) => {
                    import_error.set(None);
                    draft.set(rules.clone());
                    cx.apply(rules);
                }
                Err(e) => import_error.set(Some(format!(
                    "This file is not a rules file: {e}. Expected {{\"rules\": [{{\"pattern\": …, \"role\": …}}]}}."
                ))),
            }
        });
    };
    let export = move |_| {
        let json = draft.with_untracked(|d| serde_json::to_string_pretty(d).unwrap_or_default());
        crate::ui::widgets::download::download_text("memsight-rules.json", &json, "application/json");
    };

    let rows = move || {
        let error = cx.rules_error.get();
        draft
            .get()
            .rules
            .into_iter()
            .enumerate()
            .map(|(i, rule)| {
                let refused = error.as_ref().filter(|e| e.index == i).map(|e| e.message.clone());
                let is_refused = refused.is_some();
                let role = rule.role.map_or(String::new(), |r| r.key().to_string());
                let component = rule.component.map_or(String::new(), |c| c.key().to_string());
                view! {
                    <li class="rule" data-rule=i.to_string() class:refused=is_refused>
                        <input type="text" class="rule-name" placeholder="Name" aria-label="Rule name"
                            prop:value=rule.name.clone().unwrap_or_default()
                            on:change=move |e| { let v = event_target_value(&e); edit(i, Box::new(move |r| r.name = (!v.is_empty()).then_some(v))) }
                        />
                        <input type="text" class="rule-pattern" placeholder="keyword or regex in a frame" aria-label="Pattern"
                            prop:value=rule.pattern.clone()
                            on:change=move |e| { let v = event_target_value(&e); edit(i, Box::new(move |r| r.pattern = v)) }
                        />
                        <label class="check">
                            <input type="checkbox" class="rule-regex" prop:checked=rule.regex
                                on:change=move |e| { let v = event_target_checked(&e); edit(i, Box::new(move |r| r.regex = v)) }
                            />
                            "regex"
                        </label>
                        <select class="rule-role" aria-label="Role" prop:value=role
                            on:change=move |e| { let v = select_value(&e); edit(i, Box::new(move |r| r.role = Role::ALL.into_iter().find(|x| x.key() == v))) }
                        >
                            <option value="">"(role unchanged)"</option>
                            {Role::ALL.iter().map(|r| view! { <option value=r.key()>{format::breakdown::role_label(*r)}</option> }).collect_view()}
                        </select>
                        <select class="rule-component" aria-label="Component" prop:value=component
                            on:change=move |e| { let v = select_value(&e); edit(i, Box::new(move |r| r.component = Component::ALL.into_iter().find(|x| x.key() == v))) }
                        >
                            <option value="">"(component unchanged)"</option>
                            {Component::ALL.iter().map(|c| view! { <option value=c.key()>{format::breakdown::component_label(*c)}</option> }).collect_view()}
                        </select>
                        <button type="button" class="button quiet" title="Move up" disabled=i == 0
                            on:click=move |_| draft.update(|d| d.rules.swap(i - 1, i))>"↑"</button>
                        <button type="button" class="button quiet" title="Move down"
                            disabled=move || draft.with(|d| i + 1 >= d.rules.len())
                            on:click=move |_| draft.update(|d| d.rules.swap(i, i + 1))>"↓"</button>
                        <button type="button" class="button quiet rule-delete" title="Delete"
                            on:click=move |_| draft.update(|d| { d.rules.remove(i); })>"✕"</button>
                        {refused.map(|m| view! { <p class="view-error rule-error" role="alert">{m}</p> })}
                    </li>
                }
            })
            .collect_view()
    };

    view! {
        <section class="rules" id="rules" data-count=move || cx.rules.with(|r| r.rules.len()).to_string()>
            <h3>"Category rules"</h3>
            <p class="hint">
                "Allocations with a frame (file:line:function) matching a rule get its role and/or component; "
                "the first matching rule wins, before any inference. Rules are kept in this browser."
            </p>
            <ol class="rule-list">{rows}</ol>
            <div class="rule-actions">
                <button type="button" class="button" id="rule-add"
                    on:click=move |_| draft.update(|d| d.rules.push(Rule { name: None, pattern: String::new(), regex: false, role: None, component: None }))
                >"Add rule"</button>
                <button type="button" class="button primary" id="rules-apply" disabled=move || !changed()
                    on:click=move |_| cx.apply(draft.get_untracked())
                >"Apply"</button>
                <button type="button" class="button quiet" id="rules-reset"
                    on:click=move |_| { draft.set(Rules::default()); cx.apply(Rules::default()); }
                >"Reset"</button>
                <button type="button" class="button quiet" id="rules-export" on:click=export>"Export JSON"</button>
                <label class="button quiet" for="rules-import">"Import JSON"</label>
                <input type="file" id="rules-import" accept="application/json,.json" class="visually-hidden"
                    node_ref=file_input on:change=on_import />
                {move || cx.categorise_ms.get().map(|ms| view! {
                    <span class="hint" id="categorise-ms" data-value=ms.to_string()>{format!("categorised in {}", format::duration_us((ms * 1000.0) as u64))}</span>
                })}
            </div>
            {move || import_error.get().map(|e| view! { <p class="view-error" role="alert">{e}</p> })}
        </section>
    }
}
