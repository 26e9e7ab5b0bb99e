//! Words and units for people, shared by the page and the command line so both say the same
//! thing: binary byte units, counts with separators, durations, timestamps and percentages
//! (here), the overview's labels and sentences ([`overview`]), the breakdown's labels
//! ([`breakdown`]), the findings' words ([`findings`]), a device's Markdown report
//! ([`report`]), the tables as CSV ([`table`]), a budget check ([`check`]), and why something
//! could not be shown ([`problems`]).
//!
//! The analysis computes numbers and typed facts; only this module turns them into text. Not
//! for parsing, and not for exact values: the page always keeps the exact integer next to a
//! formatted one (`data-value`, `title`), and the command line's JSON prints it.

use crate::model::State;

pub mod breakdown;
pub mod check;
pub mod compare;
pub mod document;
pub mod findings;
pub mod names;
pub mod overview;
pub mod phases;
pub mod problems;
pub mod report;
pub mod source;
pub mod table;
pub mod workload;

const BYTE_UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// A frame `path/to/file.py:39:forward` as a reader scans for it: `file.py:39 forward`.
/// Text of another shape is returned whole.
pub fn frame_short(frame: &str) -> String {
    let mut parts = frame.rsplitn(3, ':');
    let (Some(name), Some(line), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
        return frame.to_string();
    };
    if line.is_empty() || !line.bytes().all(|b| b.is_ascii_digit()) {
        return frame.to_string();
    }
    let file = path.rsplit(['/', '\\']).next().unwrap_or(path);
    format!("{file}:{line} {name}")
}

/// What the frame an allocation is shown by says of it: the code that made it, or — for one
/// made before the trace and freed in it, whose only stack is its free's — the code that freed
/// it. `user`: the frame is the program's own code (else the most telling of PyTorch's).
pub fn made_by_label(made_in_trace: bool, freed_in_trace: bool, user: bool) -> &'static str {
    match (made_in_trace || !freed_in_trace, user) {
        (true, true) => "Made by",
        (true, false) => "Made by PyTorch, in",
        (false, true) => "Made before the trace; freed by",
        (false, false) => "Made before the trace; freed by PyTorch, in",
    }
}

/// A compiled graph's node as the user reads it: ``compiled node `addmm_1` (call_function
/// aten.addmm.default) from model.py:44 forward``.
pub fn compiled_node(node: &crate::analysis::stacks::CompiledNode) -> String {
    let mut out = match &node.name {
        Some(name) => format!("compiled node `{name}`"),
        None => "compiled node".to_string(),
    };
    let what: Vec<&str> = [&node.op, &node.target]
        .into_iter()
        .filter_map(|t| t.as_deref())
        .collect();
    if !what.is_empty() {
        out += &format!(" ({})", what.join(" "));
    }
    if let Some(from) = &node.from {
        // `file:line:name` → `model.py:42 forward`, the file without its folders.
        let mut parts = from.rsplitn(3, ':');
        let (name, line, file) = (parts.next(), parts.next(), parts.next());
        match (file, line, name) {
            (Some(file), Some(line), Some(name)) => {
                let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
                out += &format!(" from {base}:{line} {name}");
            }
            _ => out += &format!(" from {from}"),
        }
    }
    out
}

/// A device's key in JSON output: its index, `host` for pinned host memory.
pub fn device_key(id: u32) -> String {
    if id == crate::model::PINNED_HOST_DEVICE {
        "host".to_string()
    } else {
        id.to_string()
    }
}

/// What a device is called: `cuda:0`, `npu:3`, `host (pinned)`.
pub fn device(kind: crate::model::DeviceKind, id: u32) -> String {
    kind.device_name(id)
}

/// A device as a downloaded file's name carries it: `cuda0`, `npu3`, `host` (pinned host
/// memory, whatever kind names it).
pub fn device_in_file_name(kind: crate::model::DeviceKind, id: u32) -> String {
    if kind == crate::model::DeviceKind::PinnedHost || id == crate::model::PINNED_HOST_DEVICE {
        "host".to_string()
    } else {
        format!("{}{id}", kind.name())
    }
}

/// Bytes in binary units with three significant digits: `512 B`, `1.50 KiB`, `11.0 GiB`.
pub fn bytes(n: u64) -> String {
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < BYTE_UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    // 1023.7 KiB would print as "1024 KiB": show it as the next unit instead.
    if value >= 1023.5 && unit < BYTE_UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{} {}", three_digits(value), BYTE_UNITS[unit])
}

/// A tick of a byte axis at `value`, ticks `step` bytes apart, with as many decimals as
/// neighbouring ticks need to read apart: `16 GiB`, `1.5 GiB`, `51.02 GiB`.
pub fn bytes_tick(value: u64, step: u64) -> String {
    if value < 1024 {
        return format!("{value} B");
    }
    let mut unit = 0;
    let mut size = 1u64;
    while unit < BYTE_UNITS.len() - 1 && value / size >= 1024 {
        size *= 1024;
        unit += 1;
    }
    let step = step as f64 / size as f64;
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10()).ceil().clamp(0.0, 6.0) as usize
    };
    format!(
        "{:.*} {}",
        decimals,
        value as f64 / size as f64,
        BYTE_UNITS[unit]
    )
}

/// A signed byte difference: `+1.50 MiB`, `−512 B`, `0 B`.
pub fn bytes_delta(n: i64) -> String {
    match n {
        0 => "0 B".to_string(),
        n if n > 0 => format!("+{}", bytes(n as u64)),
        n => format!("\u{2212}{}", bytes(n.unsigned_abs())),
    }
}

/// Signed bytes, a minus sign only below zero (an axis of changes): `1.50 MiB`, `−512 B`.
pub fn bytes_signed(n: i64) -> String {
    if n < 0 {
        format!("\u{2212}{}", bytes(n.unsigned_abs()))
    } else {
        bytes(n.unsigned_abs())
    }
}

/// `value` (≥ 1) with three significant digits: `1.50`, `11.0`, `512`.
fn three_digits(value: f64) -> String {
    if value < 9.995 {
        format!("{value:.2}")
    } else if value < 99.95 {
        format!("{value:.1}")
    } else {
        format!("{value:.0}")
    }
}

/// A count with thousands separators: `1,234,567`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count and its noun, singular for one: `1 event`, `1,234 events`.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n => format!("{} {many}", count(n)),
    }
}

/// A duration given in microseconds: `850 µs`, `12.3 ms`, `4.56 s`, `3 min 07 s`, `2 h 05 min`.
pub fn duration_us(us: u64) -> String {
    if us < 1_000 {
        format!("{us} µs")
    } else if us < 1_000_000 {
        format!("{} ms", three_digits(us as f64 / 1e3))
    } else if us < 60_000_000 {
        format!("{} s", three_digits(us as f64 / 1e6))
    } else {
        let secs = us / 1_000_000;
        if secs < 3600 {
            format!("{} min {:02} s", secs / 60, secs % 60)
        } else {
            format!("{} h {:02} min", secs / 3600, (secs % 3600) / 60)
        }
    }
}

/// The trace event that produced `state`, as "event 1,234" or "event 1,234 (+1.2 s)", numbered
/// like the overview (from 0; state `s` is memory after event `s - 1`).
pub fn when(state: Option<State>, time_us: Option<i64>, origin: Option<f64>) -> String {
    match state.and_then(State::row_before) {
        None => "before the first event".to_string(),
        Some(row) => match (time_us, origin) {
            (Some(t), Some(o)) => format!(
                "event {} (+{})",
                count(u64::from(row.get())),
                duration_us((t as f64 - o).max(0.0) as u64)
            ),
            _ => format!("event {}", count(u64::from(row.get()))),
        },
    }
}

/// A time given in microseconds since the Unix epoch, in UTC: `2024-02-18 08:44:43 UTC`.
pub fn timestamp_us(us: u64) -> String {
    let secs = us / 1_000_000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// When a state of the trace is, in words: `after event 1,234` (state `s` is the memory after
/// event `s − 1`, events counted from 0 as the overview counts them), or `before the first
/// event` (state 0). The one place a state becomes words: the page's legend, breakdown, table,
/// links and the reports all say it so.
pub fn after_state(state: State) -> String {
    match state.row_before() {
        Some(event) => format!("after event {}", count(u64::from(event.get()))),
        None => "before the first event".to_string(),
    }
}

/// `text` shortened to `max` characters by cutting its middle, so both its beginning and its
/// distinguishing end stay: `kkaitlyn111__cs336…ctx128_fullstep_.pickle`.
pub fn shorten_middle(text: &str, max: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= max || max < 3 {
        return text.to_string();
    }
    let keep = max - 1;
    let head = keep * 2 / 5;
    let tail = keep - head;
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
}

/// Parts per million as a percentage with one decimal: `973_000` → `97.3%`.
pub fn percent_ppm(ppm: u64) -> String {
    // Round to tenths of a percent in integers so 999_950 shows as 100.0%, not 99.99…
    let tenths = (ppm + 500) / 1_000;
    format!("{}.{}%", tenths / 10, tenths % 10)
}

/// `part` of `whole` as a percentage for progress bars, clamped to 0–100.
pub fn percent_of(part: u64, whole: u64) -> u32 {
    if whole == 0 {
        return 100;
    }
    ((part.min(whole) as u128 * 100) / whole as u128) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_is_after_the_event_before_it() {
        assert_eq!(after_state(State::BEFORE_TRACE), "before the first event");
        assert_eq!(after_state(State::new(1)), "after event 0");
        assert_eq!(after_state(State::new(1235)), "after event 1,234");
    }

    #[test]
    fn a_compiled_node_says_what_it_runs_and_where_it_came_from() {
        let mut node = crate::analysis::stacks::CompiledNode {
            name: Some("add_3".into()),
            op: Some("call_function".into()),
            target: Some("aten.add".into()),
            from: Some("/home/u/proj/model.py:42:forward".into()),
        };
        assert_eq!(
            compiled_node(&node),
            "compiled node `add_3` (call_function aten.add) from model.py:42 forward"
        );
        node.target = None;
        node.from = None;
        assert_eq!(
            compiled_node(&node),
            "compiled node `add_3` (call_function)"
        );
        assert_eq!(device_key(0), "0");
        assert_eq!(device_key(crate::model::PINNED_HOST_DEVICE), "host");
    }

    #[test]
    fn frames_read_by_file_line_and_function() {
        assert_eq!(
            frame_short("/home/lin/cs336/cs336_basics/model.py:39:forward"),
            "model.py:39 forward"
        );
        assert_eq!(frame_short("C:\\work\\train.py:7:main"), "train.py:7 main");
        assert_eq!(frame_short("model.py:39:forward"), "model.py:39 forward");
        // Not a frame: whole.
        assert_eq!(frame_short("??:0x12:"), "??:0x12:");
        assert_eq!(frame_short("no frame"), "no frame");
        assert_eq!(frame_short("a:b:c"), "a:b:c");
    }

    #[test]
    fn a_frame_of_an_allocation_from_before_the_trace_is_the_code_that_freed_it() {
        assert_eq!(made_by_label(true, true, true), "Made by");
        assert_eq!(made_by_label(false, false, false), "Made by PyTorch, in");
        assert_eq!(
            made_by_label(false, true, true),
            "Made before the trace; freed by"
        );
        assert_eq!(
            made_by_label(false, true, false),
            "Made before the trace; freed by PyTorch, in"
        );
    }

    #[test]
    fn bytes_use_binary_units_with_three_significant_digits() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1024), "1.00 KiB");
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(bytes(10 * 1024), "10.0 KiB");
        assert_eq!(bytes(512 * 1024 * 1024), "512 MiB");
        assert_eq!(bytes(11_844_714_496), "11.0 GiB");
        assert_eq!(bytes(1024 * 1024 - 1), "1.00 MiB");
        assert_eq!(bytes(u64::MAX), "16.0 EiB");
    }

    #[test]
    fn byte_ticks_have_the_decimals_their_step_needs() {
        const GIB: u64 = 1 << 30;
        const MIB: u64 = 1 << 20;
        assert_eq!(bytes_tick(16 * GIB, 16 * GIB), "16 GiB");
        assert_eq!(bytes_tick(GIB + 512 * MIB, 512 * MIB), "1.5 GiB");
        assert_eq!(bytes_tick(512 * MIB, 512 * MIB), "512 MiB");
        assert_eq!(bytes_tick(51 * GIB + 16 * MIB, 16 * MIB), "51.02 GiB");
        assert_eq!(bytes_tick(51 * GIB + 32 * MIB, 16 * MIB), "51.03 GiB");
        assert_eq!(bytes_tick(512, 256), "512 B");
        assert_eq!(bytes_tick(2048, 1024), "2 KiB");
    }

    #[test]
    fn byte_deltas_carry_a_sign() {
        assert_eq!(bytes_delta(0), "0 B");
        assert_eq!(bytes_delta(2048), "+2.00 KiB");
        assert_eq!(bytes_delta(-512), "\u{2212}512 B");
        assert_eq!(bytes_delta(i64::MIN), "\u{2212}8.00 EiB");
    }

    #[test]
    fn counts_have_thousands_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(duration_us(0), "0 µs");
        assert_eq!(duration_us(850), "850 µs");
        assert_eq!(duration_us(12_345), "12.3 ms");
        assert_eq!(duration_us(4_560_000), "4.56 s");
        assert_eq!(duration_us(187_000_000), "3 min 07 s");
        assert_eq!(duration_us(7_500_000_000), "2 h 05 min");
    }

    #[test]
    fn a_moment_is_the_event_that_made_it_and_its_time_since_the_first() {
        assert_eq!(when(None, None, None), "before the first event");
        assert_eq!(
            when(Some(State::new(0)), Some(5), Some(0.0)),
            "before the first event"
        );
        assert_eq!(
            when(Some(State::new(1_235)), None, Some(0.0)),
            "event 1,234"
        );
        assert_eq!(
            when(Some(State::new(2)), Some(1_500_000), Some(300_000.0)),
            "event 1 (+1.20 s)"
        );
        // A clock that goes back says +0, not a negative time.
        assert_eq!(
            when(Some(State::new(2)), Some(10), Some(20.0)),
            "event 1 (+0 µs)"
        );
    }

    #[test]
    fn timestamps_are_utc_dates() {
        assert_eq!(timestamp_us(0), "1970-01-01 00:00:00 UTC");
        // 2024-02-18T08:44:43Z
        assert_eq!(
            timestamp_us(1_708_245_883_000_000),
            "2024-02-18 08:44:43 UTC"
        );
        // A leap day.
        assert_eq!(
            timestamp_us(1_709_208_000_000_000),
            "2024-02-29 12:00:00 UTC"
        );
    }

    #[test]
    fn long_names_keep_their_ends() {
        let name = "kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_fullstep_.pickle";
        let short = shorten_middle(name, 36);
        assert_eq!(short.chars().count(), 36);
        assert!(short.starts_with("kkaitlyn111__"), "{short}");
        assert!(short.ends_with("fullstep_.pickle"), "{short}");
        assert!(short.contains('…'));
        assert_eq!(shorten_middle("rank0.pickle", 36), "rank0.pickle");
    }

    #[test]
    fn percentages_round_to_tenths() {
        assert_eq!(percent_ppm(0), "0.0%");
        assert_eq!(percent_ppm(973_000), "97.3%");
        assert_eq!(percent_ppm(999_950), "100.0%");
        assert_eq!(percent_ppm(1_000_000), "100.0%");
        assert_eq!(percent_ppm(1_234), "0.1%");
        assert_eq!(percent_of(0, 0), 100);
        assert_eq!(percent_of(50, 200), 25);
        assert_eq!(percent_of(300, 200), 100);
        assert_eq!(percent_of(u64::MAX - 1, u64::MAX), 99);
    }

    #[test]
    fn a_device_in_a_file_name_is_its_kind_and_index() {
        use crate::model::{DeviceKind, PINNED_HOST_DEVICE};
        assert_eq!(device_in_file_name(DeviceKind::Cuda, 0), "cuda0");
        assert_eq!(device_in_file_name(DeviceKind::Npu, 3), "npu3");
        assert_eq!(
            device_in_file_name(DeviceKind::Cuda, PINNED_HOST_DEVICE),
            "host"
        );
    }
}
