//! The words of each finding ([`crate::breakdown::findings`]): a short title, why it matters
//! with its numbers in binary units, and what to try, so the page and the command line give
//! the same advice.
//!
//! Words only: which findings fire, and their numbers, are decided by the breakdown. Call
//! sites are named by whoever can read the stacks (a finding carries only their ids).

use super::{bytes, count, duration_us, percent_ppm};
use crate::analysis::categories::Role;
use crate::analysis::oom::{OomRecord, Unrecordable};
use crate::breakdown::findings::{CacheReason, Finding, FindingKind, SettingsOn, Wait};

/// `part` of `whole` as a percentage: `37.5%`.
fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return percent_ppm(0);
    }
    percent_ppm((part as u128 * 1_000_000 / whole as u128) as u64)
}

/// A role in words: `optimizer state`.
fn role_label(role: Role) -> String {
    role.key().replace('_', " ")
}

/// A wait in words: `1,500 events (15.0 ms)`.
fn wait_length(wait: &Wait) -> String {
    let events = super::counted(wait.rows as u64, "event", "events");
    match wait.us {
        Some(us) => format!("{events} ({})", duration_us(us)),
        None => events,
    }
}

/// The roles alive at an out-of-memory, the most bytes first, without empty ones.
fn roles_by_bytes(roles: &[u64]) -> Vec<(Role, u64)> {
    let mut held: Vec<(Role, u64)> = Role::ALL
        .iter()
        .zip(roles)
        .filter(|(_, &b)| b > 0)
        .map(|(&r, &b)| (r, b))
        .collect();
    held.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    held
}

/// A short title: `Out of memory at event 1,234`, `Memory grows from one iteration to the next`.
pub fn title(f: &Finding) -> String {
    match &f.kind {
        FindingKind::OutOfMemory { row, requested, .. } => format!(
            "Out of memory at event {}: a request of {} failed",
            count(u64::from(row.get())),
            bytes(*requested)
        ),
        FindingKind::LeakSuspect { growth, .. } => format!(
            "Memory grows from one iteration to the next (+{})",
            bytes(*growth)
        ),
        FindingKind::SuddenSpike { size, .. } => {
            format!("A single allocation of {}", bytes(*size))
        }
        FindingKind::Fragmentation { wasted, .. } => format!(
            "{} of the peak reserve lost to cached memory in pieces",
            bytes(*wasted)
        ),
        FindingKind::CachedMemory { reason } => match reason {
            CacheReason::AtOutOfMemory { at, .. } => format!(
                "{} cached could not serve the request that failed",
                bytes(at.overhead)
            ),
            CacheReason::Growing { growth, .. } => format!(
                "Cached memory grows from one iteration to the next (+{})",
                bytes(*growth)
            ),
        },
        FindingKind::RoundingWaste { waste, .. } => {
            format!("{} lost to rounding up block sizes", bytes(*waste))
        }
        FindingKind::LongFreeWaits { waits, .. } => {
            format!(
                "{} on other streams",
                super::counted(*waits as u64, "free waited", "frees waited")
            )
        }
        FindingKind::WrappedTrace { before, .. } => format!(
            "The trace misses the start of the run ({} earlier allocations)",
            count(*before)
        ),
    }
}

/// Why it matters, with its numbers.
pub fn why(f: &Finding) -> String {
    match &f.kind {
        FindingKind::OutOfMemory {
            requested,
            device_free,
            allocated,
            reserved,
            live,
            roles,
            ..
        } => {
            let held: Vec<String> = roles_by_bytes(roles)
                .into_iter()
                .take(3)
                .map(|(role, b)| format!("{} {}", role_label(role), bytes(b)))
                .collect();
            let held = if held.is_empty() {
                String::new()
            } else {
                format!(" Most of it was {}.", held.join(", "))
            };
            let cached = reserved.saturating_sub(*allocated);
            format!(
                "A request of {} failed with {} free on the device. {} allocations held {} and the allocator reserved {} ({} cached but unused, too small or too scattered for the request).{held}",
                bytes(*requested),
                bytes(*device_free),
                count(*live as u64),
                bytes(*allocated),
                bytes(*reserved),
                bytes(cached),
            )
        }
        FindingKind::LeakSuspect {
            iterations,
            growth,
            peak_allocated,
            ..
        } => {
            let shown: Vec<String> = iterations.iter().map(|i| bytes(i.allocated)).collect();
            format!(
                "Allocated memory at the start of each forward pass: {}. After the first (warm-up) iteration it grew every time, by {} over {} iterations ({} of the peak, {}). Memory kept from every iteration adds up until the run goes out of memory.",
                shown.join(", "),
                bytes(*growth),
                count(iterations.len().saturating_sub(2) as u64),
                percent(*growth, *peak_allocated),
                bytes(*peak_allocated),
            )
        }
        FindingKind::SuddenSpike {
            size,
            row,
            role,
            peak_allocated,
            count: spikes,
            ..
        } => {
            let more = match spikes {
                0 | 1 => String::new(),
                2 => " One more allocation was as large.".to_string(),
                n => format!(" {} more allocations were as large.", count(*n as u64 - 1)),
            };
            format!(
                "One allocation ({}) of {} at event {} is {} of the peak allocated memory ({}): the peak depends on when it is alive, and it needs one free block that large.{more}",
                role_label(*role),
                bytes(*size),
                count(u64::from(row.get())),
                percent(*size, *peak_allocated),
                bytes(*peak_allocated),
            )
        }
        FindingKind::Fragmentation {
            requests,
            reserved_for_them,
            worst,
            peak_reserved,
            peak_state,
            cached_free_at_peak,
            wasted,
        } => {
            let grew = if f.settings.expandable_segments {
                "map more memory into its expandable segments"
            } else {
                "reserve a new segment"
            };
            let largest = match worst.largest_free_block {
                Some(block) => format!(", the largest free block {},", bytes(block)),
                None => String::new(),
            };
            format!(
                "{} requests made the allocator {grew} ({} in all) while the memory it had cached for their size on their stream would have held them: no cached free block was large enough. When reserved memory peaked at {} ({}), {} sat cached and free in those pools: had it been in one piece, the peak reserve could have been {} ({}) lower, and no more. The worst, a request of {} at event {}, found {} cached{largest} and {} {}.",
                count(*requests as u64),
                bytes(*reserved_for_them),
                bytes(*peak_reserved),
                super::after_state(*peak_state),
                bytes(*cached_free_at_peak),
                bytes(*wasted),
                percent(*wasted, *peak_reserved),
                bytes(worst.requested),
                count(u64::from(worst.row.get())),
                bytes(worst.cached_free),
                if f.settings.expandable_segments { "the segment grew by" } else { "got a new segment of" },
                bytes(worst.segment),
            )
        }
        FindingKind::CachedMemory { reason } => match reason {
            CacheReason::AtOutOfMemory { row, requested, at } => format!(
                "When the request of {} at event {} failed, the allocator held {} reserved and {} allocated: {} ({}) sat cached in free blocks it could neither give to the request (none was large enough, or they were on another stream) nor release (their segments held live tensors).",
                bytes(*requested),
                count(u64::from(row.get())),
                bytes(at.reserved),
                bytes(at.allocated),
                bytes(at.overhead),
                percent(at.overhead, at.reserved),
            ),
            CacheReason::Growing { iterations, growth } => {
                let cached: Vec<String> = iterations.iter().map(|o| bytes(o.overhead)).collect();
                format!(
                    "Cached memory at the start of each iteration: {}. After the first iteration, which fills the cache once, it grew by {} while reserved memory never shrank: requests of changing sizes keep needing new segments instead of reusing the cached ones.",
                    cached.join(", "),
                    bytes(*growth),
                )
            }
        },
        FindingKind::RoundingWaste {
            waste,
            allocated,
            requested,
            blocks,
        } => format!(
            "The {} blocks allocated at the end hold {} for {} requested: {} ({}) is padding from rounding requests up to the allocator's block sizes, or from blocks not split because the rest would be too small.",
            count(*blocks as u64),
            bytes(*allocated),
            bytes(*requested),
            bytes(*waste),
            percent(*waste, *allocated),
        ),
        FindingKind::LongFreeWaits {
            waits,
            waited_bytes,
            longest_in_rows,
            longest_in_time,
            pending_at_peak,
            ..
        } => {
            let mut text = format!(
                "{} allocations ({}) stayed allocated after they were freed, until work queued on other streams finished (free_requested to free_completed). The longest wait lasted {} for {}",
                count(*waits as u64),
                bytes(*waited_bytes),
                wait_length(longest_in_rows),
                bytes(longest_in_rows.size),
            );
            if !longest_in_rows.completed {
                text.push_str(", still waiting at the end");
            }
            text.push('.');
            if let Some(w) = longest_in_time.filter(|w| w.allocation != longest_in_rows.allocation)
            {
                text.push_str(&format!(
                    " The longest in time lasted {} for {}.",
                    wait_length(&w),
                    bytes(w.size)
                ));
            }
            if *pending_at_peak > 0 {
                text.push_str(&format!(
                    " At the allocated peak, {} was waiting this way.",
                    bytes(*pending_at_peak)
                ));
            }
            text
        }
        FindingKind::WrappedTrace {
            before,
            freed_during_trace,
            still_alive,
            freed_bytes,
            alive_bytes,
        } => format!(
            "{} allocations existed before the first recorded event: {} freed during the trace ({}) and {} still alive at the end ({}). The trace's ring buffer wrapped (max_entries) or recording started late, so where and when they were made is unknown, and roles, iterations and growth are judged on part of the run.",
            count(*before),
            count(*freed_during_trace),
            bytes(*freed_bytes),
            count(*still_alive),
            bytes(*alive_bytes),
        ),
    }
}

/// Advice for the largest role alive at an out-of-memory.
fn role_advice(role: Role) -> &'static str {
    match role {
        Role::Activations => "Activations dominate: use activation checkpointing (torch.utils.checkpoint) so they are recomputed in the backward, a smaller batch or sequence length (with gradient accumulation to keep the effective batch), or mixed precision (torch.autocast).",
        Role::ForwardTemporaries => "Forward temporaries dominate: tensors the forward makes and frees within itself (attention scores, logits, upcasts, concatenations), so checkpointing does not remove them; use fused or memory-efficient kernels (torch.nn.functional.scaled_dot_product_attention), compute the loss over the vocabulary in chunks, keep intermediates in bf16, or lower the batch or sequence length.",
        Role::Gradients => "Gradients dominate: call optimizer.zero_grad(set_to_none=True) so gradients are freed between steps, accumulate in bf16, or shard gradients across devices (FSDP, ZeRO-2).",
        Role::BackwardTemporaries => "Backward temporaries dominate: tensors the backward makes and frees within itself (the gradients of large activations, recomputed checkpoints); lower the batch or sequence length, use fused kernels whose backward needs less scratch, or checkpoint fewer, smaller segments.",
        Role::OptimizerState => "Optimizer state dominates: AdamW keeps two fp32 tensors per parameter; try a lighter optimizer (SGD, Adafactor, 8-bit Adam) or shard the state (FSDP, ZeRO).",
        Role::OptimizerTemporaries => "Optimizer temporaries dominate: the multi-tensor (foreach) step copies whole groups of parameters at once; pass foreach=False, or fused=True where the optimizer has it, to step a tensor at a time.",
        Role::Parameters => "Parameters dominate: load the model in bf16/fp16, quantise it, or shard it across devices (FSDP, tensor parallelism); check that no second copy of the weights stays on the device.",
        Role::Inputs => "Inputs dominate: move smaller batches to the device, and free the previous batch before loading the next.",
        Role::Communication => "Communication buffers dominate: lower the bucket sizes of DDP/FSDP (bucket_cap_mb) or overlap fewer collectives.",
        Role::Workspace => "Library workspaces dominate: limit cuBLAS/cuDNN workspaces (CUBLAS_WORKSPACE_CONFIG, torch.backends.cudnn.benchmark=False).",
        Role::KvCache => "The KV cache dominates: a serving engine sizes it to fill what is left (vLLM's gpu_memory_utilization, sglang's mem_fraction_static); lower that fraction, max_model_len or max_num_seqs, or quantise the cache (kv_cache_dtype=fp8).",
        Role::CudaGraph => "CUDA graph pools dominate: capture fewer batch sizes (vLLM's cudagraph_capture_sizes / max_seq_len_to_capture, sglang's cuda_graph_max_bs) or disable graphs (enforce_eager, disable_cuda_graph).",
        Role::Unknown => "Record stacks (torch.cuda.memory._record_memory_history(stacks='all')) from the start of the run to see what holds the memory.",
    }
}

/// The findings a short list leaves out: `2 more findings`.
pub fn more_findings(n: usize) -> String {
    match n {
        1 => "1 more finding".into(),
        n => format!("{} more findings", count(n as u64)),
    }
}

/// What a device with no finding says: that nothing stands out, and — where the file could
/// not have recorded an out-of-memory — that whether the run ran out is unknown, not that it
/// did not.
pub fn nothing_found(oom: Option<&OomRecord>) -> String {
    match oom {
        Some(OomRecord::CannotRecord { why }) => format!(
            "Nothing stands out: no leak, spike, fragmentation, growing cache or long wait worth a look. Whether the run ran out of memory is unknown: {}.",
            match why {
                Unrecordable::Format2_0 => "a PyTorch 2.0-era file whose trace holds no allocation cannot record it",
                Unrecordable::NoTrace => "no allocation was traced, so an out-of-memory could not be recorded (record one with torch.cuda.memory._record_memory_history())",
            }
        ),
        _ => "Nothing stands out: no out-of-memory, leak, spike, fragmentation, growing cache or long wait worth a look.".into(),
    }
}

/// What to do about cached memory in pieces, given the settings the file already has: a
/// setting already on is never recommended again.
fn pieces_advice(settings: SettingsOn) -> String {
    if settings.expandable_segments {
        // With expandable segments every block splits, so max_split_size_mb changes nothing.
        return "Expandable segments are already on in this file's allocator settings, so no setting joins the pieces: they are free ranges between live tensors, each too small for the request. Free or reuse large temporaries sooner, and keep request sizes the same from step to step, so freed ranges are reused whole.".into();
    }
    let split = match settings.max_split_size {
        Some(limit) => format!(
            "; max_split_size_mb is already {} here, and lowering it keeps more large free blocks whole",
            bytes(limit)
        ),
        None => "; otherwise max_split_size_mb (e.g. max_split_size_mb:512) stops large free blocks from being split for small requests".into(),
    };
    format!("Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch 2.1 or later) so segments grow in place instead of leaving scattered free blocks{split}.")
}

/// What to try, concretely.
pub fn what_to_try(f: &Finding) -> String {
    match &f.kind {
        FindingKind::OutOfMemory {
            requested,
            device_free,
            allocated,
            reserved,
            roles,
            ..
        } => {
            let mut text = roles_by_bytes(roles)
                .first()
                .map(|&(role, _)| role_advice(role).to_string())
                .unwrap_or_else(|| role_advice(Role::Unknown).to_string());
            let cached = reserved.saturating_sub(*allocated);
            if cached >= *requested || cached.saturating_add(*device_free) >= *requested {
                text.push_str(&format!(" {} was cached but unused: ", bytes(cached)));
                text.push_str(&pieces_advice(f.settings));
            }
            text
        }
        FindingKind::LeakSuspect { .. } => "Look at the call sites that grew: something keeps tensors from one iteration to the next. Common causes: appending the loss or outputs to a list without .item() or .detach() (which also keeps the autograd graph alive), tensors kept in lists or dicts across iterations for logging or caches, hooks that store activations, and a growing KV cache. Log with loss.item(), .detach().cpu() what you keep, and clear caches between iterations.".into(),
        FindingKind::SuddenSpike { .. } => "Large single tensors are often logits over a big vocabulary (batch × sequence × vocabulary, in fp32), full attention score matrices, or copies made by torch.cat, .contiguous() or .float(). Compute the loss in chunks, use torch.nn.functional.scaled_dot_product_attention (memory-efficient kernels), keep logits in bf16, lower the batch or sequence length, or use activation checkpointing so the big intermediate is not kept.".into(),
        FindingKind::Fragmentation { .. } => format!("{} Allocating long-lived tensors (parameters, optimizer state, buffers) before temporaries, and keeping tensor shapes constant from step to step, also helps. torch.cuda.empty_cache() only releases whole free segments.", pieces_advice(f.settings)),
        FindingKind::CachedMemory { reason: CacheReason::AtOutOfMemory { .. } } => format!("{} Calling torch.cuda.empty_cache() does not help here: the allocator already released every wholly free segment before it gave up.", pieces_advice(f.settings)),
        FindingKind::CachedMemory { reason: CacheReason::Growing { .. } } => {
            let grow = if f.settings.expandable_segments {
                ""
            } else {
                " PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets segments grow in place."
            };
            format!("If tensor sizes change from step to step (variable sequence lengths, dynamic batches), pad or bucket them so cached blocks get reused.{grow} torch.cuda.empty_cache() returns whole free segments to the driver, but the next allocations pay for cudaMalloc again: call it between phases, not every step.")
        }
        FindingKind::RoundingWaste { .. } => "If allocator_settings sets roundup_power2_divisions, lower or remove it: it rounds requests up to power-of-two fractions. If max_split_size_mb is set, blocks above it are not split, so a smaller request can take a whole large block. Odd tensor sizes also round up: pad shapes to multiples of 8 or 64 (faster on tensor cores too) or batch many small tensors into one.".into(),
        FindingKind::LongFreeWaits { .. } => "These are tensors used on more than one CUDA stream (tensor.record_stream(), communication overlapped with compute, copies on a side stream): the allocator cannot reuse them until the other stream's work completes. Free them earlier, have the stream that uses a tensor allocate it instead of calling record_stream, or synchronise (stream.wait_stream, torch.cuda.Event) sooner; with NCCL, TORCH_NCCL_AVOID_RECORD_STREAMS=1 avoids record_stream for collectives.".into(),
        FindingKind::WrappedTrace { .. } => "Call torch.cuda.memory._record_memory_history() before building the model and optimizer, and with a larger max_entries (it keeps every event by default) so the trace covers a whole iteration and its setup.".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::breakdown::findings::{FragmentedRequest, Iteration, Overhead, StackBytes};

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    fn finding(kind: FindingKind) -> Finding {
        Finding::new(kind, vec![])
    }

    fn wait(rows: u32, us: Option<u64>) -> Wait {
        Wait {
            allocation: 3,
            size: 10 * MIB,
            requested_row: crate::model::Row::new(5),
            rows,
            us,
            completed: true,
        }
    }

    #[test]
    fn out_of_memory_names_the_largest_roles_and_their_remedy() {
        let mut roles = vec![0; Role::ALL.len()];
        roles[Role::Parameters as usize] = GIB;
        roles[Role::Activations as usize] = 3 * GIB;
        let f = finding(FindingKind::OutOfMemory {
            row: crate::model::Row::new(1234),
            requested: 2 * GIB,
            device_free: 100 * MIB,
            allocated: 4 * GIB,
            reserved: 7 * GIB,
            live: 12,
            roles,
            stacks: vec![StackBytes {
                stack: 0,
                bytes: GIB,
            }],
        });
        assert_eq!(
            title(&f),
            "Out of memory at event 1,234: a request of 2.00 GiB failed"
        );
        let because = why(&f);
        assert!(
            because.contains("Most of it was activations 3.00 GiB, parameters 1.00 GiB."),
            "{because}"
        );
        assert!(because.contains("3.00 GiB cached"), "{because}");
        let advice = what_to_try(&f);
        assert!(advice.starts_with("Activations dominate"), "{advice}");
        assert!(advice.contains("expandable_segments:True"), "{advice}");
    }

    #[test]
    fn leak_lists_allocated_bytes_per_iteration() {
        let f = finding(FindingKind::LeakSuspect {
            iterations: [960, 1088, 1216, 1344]
                .iter()
                .enumerate()
                .map(|(i, &m)| Iteration {
                    state: crate::model::State::new(i as u32 * 10),
                    allocated: m * MIB,
                })
                .collect(),
            growth: 256 * MIB,
            peak_allocated: 1536 * MIB,
            stacks: vec![],
        });
        assert_eq!(
            title(&f),
            "Memory grows from one iteration to the next (+256 MiB)"
        );
        let because = why(&f);
        assert!(
            because.contains("960 MiB, 1.06 GiB, 1.19 GiB, 1.31 GiB"),
            "{because}"
        );
        assert!(
            because.contains("by 256 MiB over 2 iterations (16.7% of the peak"),
            "{because}"
        );
        assert!(what_to_try(&f).contains(".detach()"));
    }

    #[test]
    fn memory_layout_findings_say_their_numbers() {
        let mut f = finding(FindingKind::Fragmentation {
            requests: 3,
            reserved_for_them: 384 * MIB,
            worst: FragmentedRequest {
                row: crate::model::Row::new(1200),
                requested: 100 * MIB,
                cached_free: 300 * MIB,
                segment: 128 * MIB,
                segment_row: crate::model::Row::new(1199),
                largest_free_block: Some(60 * MIB),
            },
            peak_reserved: 4 * GIB,
            peak_state: crate::model::State::new(1500),
            cached_free_at_peak: 200 * MIB,
            wasted: 200 * MIB,
        });
        assert_eq!(
            title(&f),
            "200 MiB of the peak reserve lost to cached memory in pieces"
        );
        let because = why(&f);
        assert!(
            because
                .contains("3 requests made the allocator reserve a new segment (384 MiB in all)"),
            "{because}"
        );
        assert!(
            because.contains("When reserved memory peaked at 4.00 GiB (after event 1,499), 200 MiB sat cached and free in those pools: had it been in one piece, the peak reserve could have been 200 MiB (4.9%) lower, and no more."),
            "{because}"
        );
        assert!(
            because.contains("a request of 100 MiB at event 1,200, found 300 MiB cached, the largest free block 60.0 MiB, and got a new segment of 128 MiB"),
            "{because}"
        );
        let advice = what_to_try(&f);
        assert!(
            advice.contains("expandable_segments:True") && advice.contains("max_split_size_mb:512"),
            "{advice}"
        );
        // Settings the file already has are never recommended again.
        f.settings = SettingsOn {
            expandable_segments: false,
            max_split_size: Some(512 * MIB),
        };
        let advice = what_to_try(&f);
        assert!(
            advice.contains("max_split_size_mb is already 512 MiB here"),
            "{advice}"
        );
        assert!(!advice.contains("max_split_size_mb:512"), "{advice}");
        f.settings.expandable_segments = true;
        let advice = what_to_try(&f);
        assert!(
            !advice.contains("expandable_segments:True") && !advice.contains("max_split_size_mb"),
            "{advice}"
        );
        assert!(
            advice.contains("Expandable segments are already on"),
            "{advice}"
        );
        assert!(why(&f).contains("map more memory into its expandable segments"));
        assert!(why(&f).contains("the segment grew by 128 MiB"));

        let at = Overhead {
            state: crate::model::State::new(41),
            reserved: 1536 * MIB,
            allocated: 1060 * MIB,
            overhead: 476 * MIB,
        };
        let f = finding(FindingKind::CachedMemory {
            reason: CacheReason::AtOutOfMemory {
                row: crate::model::Row::new(40),
                requested: 600 * MIB,
                at,
            },
        });
        assert_eq!(
            title(&f),
            "476 MiB cached could not serve the request that failed"
        );
        let because = why(&f);
        assert!(
            because.contains("the allocator held 1.50 GiB reserved and 1.04 GiB allocated: 476 MiB (31.0%) sat cached"),
            "{because}"
        );
        assert!(what_to_try(&f).contains("expandable_segments:True"));
        let f = finding(FindingKind::CachedMemory {
            reason: CacheReason::Growing {
                iterations: vec![
                    Overhead {
                        state: crate::model::State::new(1),
                        reserved: GIB,
                        allocated: GIB,
                        overhead: 0,
                    },
                    Overhead {
                        state: crate::model::State::new(9),
                        reserved: 2 * GIB,
                        allocated: GIB,
                        overhead: GIB,
                    },
                    Overhead {
                        state: crate::model::State::new(17),
                        reserved: 3 * GIB,
                        allocated: GIB,
                        overhead: 2 * GIB,
                    },
                ],
                growth: GIB,
            },
        });
        assert_eq!(
            title(&f),
            "Cached memory grows from one iteration to the next (+1.00 GiB)"
        );
        assert!(why(&f).contains("0 B, 1.00 GiB, 2.00 GiB"), "{}", why(&f));
        assert!(what_to_try(&f).contains("bucket"));

        let f = finding(FindingKind::RoundingWaste {
            waste: 120 * MIB,
            allocated: 2000 * MIB,
            requested: 1880 * MIB,
            blocks: 20,
        });
        assert!(why(&f).contains("120 MiB (6.0%)"), "{}", why(&f));
        assert!(what_to_try(&f).contains("roundup_power2_divisions"));
    }

    #[test]
    fn waits_spikes_and_wrapped_traces_say_their_numbers() {
        let f = finding(FindingKind::LongFreeWaits {
            waits: 2,
            waited_bytes: 20 * MIB,
            longest_in_rows: wait(1500, None),
            longest_in_time: Some(Wait {
                allocation: 4,
                ..wait(3, Some(200_000))
            }),
            pending_at_peak: 0,
            peak_state: crate::model::State::new(7),
        });
        assert_eq!(title(&f), "2 frees waited on other streams");
        let because = why(&f);
        assert!(
            because.contains("lasted 1,500 events for 10.0 MiB."),
            "{because}"
        );
        assert!(
            because.contains("longest in time lasted 3 events (200 ms)"),
            "{because}"
        );
        assert!(what_to_try(&f).contains("record_stream"));

        let f = finding(FindingKind::SuddenSpike {
            size: 600 * MIB,
            row: crate::model::Row::new(12),
            stack: 0,
            role: Role::ForwardTemporaries,
            peak_allocated: 1560 * MIB,
            count: 2,
        });
        assert_eq!(title(&f), "A single allocation of 600 MiB");
        let because = why(&f);
        assert!(
            because.contains("(forward temporaries) of 600 MiB at event 12 is 38.5%"),
            "{because}"
        );
        assert!(
            because.contains("One more allocation was as large."),
            "{because}"
        );

        let f = finding(FindingKind::WrappedTrace {
            before: 2,
            freed_during_trace: 1,
            still_alive: 1,
            freed_bytes: 50 * MIB,
            alive_bytes: 120 * MIB,
        });
        assert!(title(&f).contains("2 earlier allocations"));
        assert!(why(&f).contains(
            "1 freed during the trace (50.0 MiB) and 1 still alive at the end (120 MiB)"
        ));
        assert!(what_to_try(&f).contains("max_entries"));
    }
}
