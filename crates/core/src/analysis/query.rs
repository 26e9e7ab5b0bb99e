//! What a search looks for, read from what the user typed: an address, or text in a frame's
//! file or function name. Shared by the timeline's search and the table's filter; not the
//! place for matching elements (each view walks its own).

/// What a search query looks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Query {
    /// Elements containing this address.
    Address(u64),
    /// Elements with a frame whose file or function name contains this text (lower case).
    Text(String),
}

impl Query {
    /// `0x7f00…` (or bare hex of 6+ digits with a digit a–f or 0–9 only) is an address;
    /// anything else is frame text. Empty queries find nothing.
    pub fn parse(text: &str) -> Option<Query> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        let hex = text
            .strip_prefix("0x")
            .or_else(|| text.strip_prefix("0X"))
            .or_else(|| {
                (text.len() >= 6
                    && text.chars().all(|c| c.is_ascii_hexdigit())
                    && text.chars().any(|c| c.is_ascii_digit()))
                .then_some(text)
            });
        if let Some(hex) = hex {
            if let Ok(addr) = u64::from_str_radix(hex, 16) {
                return Some(Query::Address(addr));
            }
        }
        Some(Query::Text(text.to_lowercase()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_tell_addresses_from_text() {
        assert_eq!(Query::parse(" 0x7f12 "), Some(Query::Address(0x7f12)));
        assert_eq!(
            Query::parse("7f0012ab00"),
            Some(Query::Address(0x7f0012ab00))
        );
        assert_eq!(Query::parse("Linear"), Some(Query::Text("linear".into())));
        assert_eq!(Query::parse("facade"), Some(Query::Text("facade".into())));
        assert_eq!(Query::parse("   "), None);
    }
}
