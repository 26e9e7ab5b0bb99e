//! Nothing read from a file reaches a terminal raw: every text the command line prints or
//! writes passes through [`escape_control`] (text, Markdown, CSV, error messages) or
//! [`escape_json`] (JSON), so a frame name holding `ESC ]0;…BEL` cannot retitle the terminal,
//! `ESC [2J` cannot clear it and a bidirectional override cannot reorder what is shown.

use std::borrow::Cow;

/// `eprintln!`, its text passed through [`escape_control`]: every message on standard error,
/// since they quote paths and files' data.
macro_rules! say {
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::escape::escape_control(&format!($($arg)*)))
    };
}

/// Whether `c` is a character a terminal may act on rather than show: C0 controls, DEL, C1
/// controls, and the bidirectional overrides and isolates. Newlines and tabs are layout and
/// are not counted here.
fn acts_on_terminal(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every character a terminal may act on written as visible text: ESC as `\e`,
/// other controls below U+0080 as `\xNN`, the rest as `\u{NNNN}`. Newlines and tabs stay.
pub fn escape_control(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts_on_terminal) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\x1b' => out.push_str("\\e"),
            c if acts_on_terminal(c) && (c as u32) < 0x80 => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if acts_on_terminal(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// JSON `text` (as serde_json writes it, every C0 control already escaped) with the rest a
/// terminal may act on (DEL, C1 controls, bidirectional overrides) written as `\uNNNN`: the
/// same JSON value, printable raw. Those characters can only stand inside JSON strings.
pub fn escape_json(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts_on_terminal) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if acts_on_terminal(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` as printed: [`escape_json`] for JSON, else [`escape_control`].
pub fn escape_output(text: &str, json: bool) -> Cow<'_, str> {
    if json {
        escape_json(text)
    } else {
        escape_control(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_not_sent() {
        assert_eq!(escape_control("a\tb\nc"), "a\tb\nc");
        assert_eq!(escape_control("\x1b]0;pwned\x07"), "\\e]0;pwned\\x07");
        assert_eq!(escape_control("\x1b[2J\r\x7f"), "\\e[2J\\x0d\\x7f");
        assert_eq!(escape_control("\u{9b}2J \u{202e}x"), "\\u{9b}2J \\u{202e}x");
    }

    #[test]
    fn json_stays_the_same_value() {
        let value = serde_json::json!({ "name": "\x1b[2J\u{9b}\u{7f}\u{202e}é" });
        let text = value.to_string();
        let escaped = escape_json(&text);
        assert!(!escaped.chars().any(acts_on_terminal), "{escaped}");
        let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back, value);
    }
}
