//! A snapshot reduced to a file of kilobytes (hundreds for thousands of call sites): every
//! device's [`Digest`] (with its call sites and modules) under the snapshot's name,
//! versioned, written as JSON. A job of any
//! size digests each snapshot where it was written and moves only the digests: the files
//! table, a comparison, a report's summary and a budget check read them as they read the
//! snapshots.
//!
//! A reader refuses a digest of another version with a message saying which is newer, never
//! reads one as if it were its own. Not the place for making a device's digest
//! ([`super::digest`]) or for reading snapshots (`decode`).

use serde::{Deserialize, Serialize};

use super::digest::Digest;
use crate::model::redact::Redaction;

use crate::decode::DIGEST_FORMAT;

/// The digest layout this build writes and reads. Any change to [`DigestFile`] or [`Digest`]
/// that an older reader would misread raises it.
pub const DIGEST_VERSION: u32 = 1;

/// A file of digests larger than this is not one memsight wrote: a digest holds kilobytes to
/// a few hundred per device, so this is thousands of ranks' digests in one file.
pub const MAX_DIGESTS_BYTES: u64 = 1 << 30;

/// A snapshot's digest as written to a file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DigestFile {
    /// Always [`DIGEST_FORMAT`].
    pub format: String,
    /// [`DIGEST_VERSION`] of the memsight that wrote it.
    pub version: u32,
    /// The snapshot's name as it was given (its path), which the files table shows and reads
    /// ranks, iterations and settings from.
    pub name: String,
    /// The memsight that wrote it (`memsight 0.1.0`).
    pub writer: String,
    /// The snapshot's size in bytes as read (compressed bytes for gzip).
    pub snapshot_bytes: u64,
    /// Its paths were redacted when it was written.
    #[serde(default)]
    pub redacted: bool,
    /// The device a view of the snapshot shows first (where an allocation failed, else the
    /// highest peak): what a comparison takes when no device is named.
    pub default_device: Option<u32>,
    /// Every device of the snapshot, ascending by id, each at its run's allocated peak.
    pub devices: Vec<Digest>,
}

impl DigestFile {
    /// A digest of this build's version.
    pub fn new(
        name: &str,
        writer: &str,
        snapshot_bytes: u64,
        default_device: Option<u32>,
        devices: Vec<Digest>,
    ) -> Self {
        DigestFile {
            format: DIGEST_FORMAT.to_string(),
            version: DIGEST_VERSION,
            name: name.to_string(),
            writer: writer.to_string(),
            snapshot_bytes,
            redacted: false,
            default_device,
            devices,
        }
    }

    /// The JSON written to a digest file (one line, then a line break).
    pub fn to_json(&self) -> String {
        let mut out = serde_json::to_string(self).expect("a digest serializes");
        out.push('\n');
        out
    }

    /// The digest of `device`.
    pub fn device(&self, device: u32) -> Option<&Digest> {
        self.devices.iter().find(|d| d.device == device)
    }

    /// The device a view shows first ([`DigestFile::default_device`]).
    pub fn shown_device(&self) -> Option<u32> {
        self.default_device
            .or_else(|| self.devices.first().map(|d| d.device))
    }
}

/// Redacts a digest written without: its name and the frames of its call sites and modules,
/// planned from the paths those frames hold (see [`crate::model::redact`]).
pub fn redact_digest(mut file: DigestFile) -> DigestFile {
    if file.redacted {
        return file;
    }
    let labels: Vec<String> = file
        .devices
        .iter()
        .flat_map(|d| d.call_sites.iter().chain(&d.modules))
        .map(|k| frame_path(&k.label).to_string())
        .chain([file.name.clone()])
        .collect();
    let redaction = Redaction::plan(labels.iter().map(String::as_str));
    let apply = |text: &mut String| {
        if let std::borrow::Cow::Owned(changed) = redaction.apply(text) {
            *text = changed;
        }
    };
    apply(&mut file.name);
    for device in &mut file.devices {
        for keyed in device.call_sites.iter_mut().chain(&mut device.modules) {
            // The label's path as planned, and the rest of the frame after it.
            let path_len = frame_path(&keyed.label).len();
            let (path, rest) = keyed.label.split_at(path_len);
            let mut path = path.to_string();
            apply(&mut path);
            keyed.label = format!("{path}{rest}");
            apply(&mut keyed.key);
        }
    }
    file.redacted = true;
    file
}

/// The file path of a frame's text `path:line:name` (the whole text when it has no line).
fn frame_path(frame: &str) -> &str {
    let mut parts = frame.rsplitn(3, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(_), Some(line), Some(path)) if line.bytes().all(|b| b.is_ascii_digit()) => path,
        _ => frame,
    }
}

/// Why bytes are not a digest this build can read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DigestError {
    /// Not JSON, or not a digest's JSON.
    NotADigest { detail: String },
    /// A digest of another layout.
    Version { found: u32 },
    /// A digest of this version whose contents do not fit its layout.
    Malformed { detail: String },
}

impl std::fmt::Display for DigestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DigestError::NotADigest { detail } => write!(f, "not a memsight digest: {detail}"),
            DigestError::Version { found } if *found > DIGEST_VERSION => write!(
                f,
                "a memsight digest of version {found}, newer than this memsight reads \
                 ({DIGEST_VERSION}): update memsight to read it"
            ),
            DigestError::Version { found } => write!(
                f,
                "a memsight digest of version {found}, older than this memsight reads \
                 ({DIGEST_VERSION}): write it again from its snapshot with `memsight digest`"
            ),
            DigestError::Malformed { detail } => {
                write!(f, "a memsight digest that cannot be read: {detail}")
            }
        }
    }
}

/// Reads a digest file's bytes: its version first, so that a digest of another layout is
/// refused rather than misread.
pub fn read_digest(bytes: &[u8]) -> Result<DigestFile, DigestError> {
    // Its header first, so that a digest of another layout is never read as this one.
    let header: Header = serde_json::from_slice(bytes).map_err(|e| DigestError::NotADigest {
        detail: in_words(&e),
    })?;
    digest_under(&header, bytes)
}

/// Reads one or more digests written one after another (as `memsight digest` prints them, one
/// per line; a baseline is such a file): each as [`read_digest`] reads one. The error of the
/// first that cannot be read, counting from 1.
pub fn read_digests(bytes: &[u8]) -> Result<Vec<DigestFile>, (usize, DigestError)> {
    let mut out = Vec::new();
    // Each digest's header, then the digest from its own bytes (the stream's offsets): read
    // straight into its types, twice as fast as through a JSON tree.
    let mut headers = serde_json::Deserializer::from_slice(bytes).into_iter::<Header>();
    let mut start = 0;
    while let Some(header) = headers.next() {
        let at = out.len() + 1;
        let header = header.map_err(|e| {
            (
                at,
                DigestError::NotADigest {
                    detail: in_words(&e),
                },
            )
        })?;
        let end = headers.byte_offset();
        out.push(digest_under(&header, &bytes[start..end]).map_err(|e| (at, e))?);
        start = end;
    }
    if out.is_empty() {
        return Err((
            1,
            DigestError::NotADigest {
                detail: "the file is empty".to_string(),
            },
        ));
    }
    Ok(out)
}

/// What says a JSON object is a digest, and of which layout (its other keys are skipped).
#[derive(Deserialize)]
struct Header {
    format: Option<String>,
    version: Option<u32>,
}

/// The digest in `bytes`, whose `header` was read: refused unless it says this layout.
fn digest_under(header: &Header, bytes: &[u8]) -> Result<DigestFile, DigestError> {
    if header.format.as_deref() != Some(DIGEST_FORMAT) {
        return Err(DigestError::NotADigest {
            detail: format!("its \"format\" is not \"{DIGEST_FORMAT}\""),
        });
    }
    match header.version {
        Some(DIGEST_VERSION) => {}
        Some(found) => return Err(DigestError::Version { found }),
        None => {
            return Err(DigestError::Malformed {
                detail: "it has no \"version\"".to_string(),
            })
        }
    }
    serde_json::from_slice(bytes).map_err(|e| DigestError::Malformed {
        detail: in_words(&e),
    })
}

/// A JSON reader's error with the program's type names said in words: "expected a whole
/// number from 0 to 2^64 − 1", not "expected u64"; "expected an object", not "expected struct
/// DigestFile".
fn in_words(error: &serde_json::Error) -> String {
    const TYPES: [(&str, &str); 10] = [
        ("u64", "a whole number from 0 to 2^64 \u{2212} 1"),
        ("u32", "a whole number from 0 to 2^32 \u{2212} 1"),
        ("u16", "a whole number from 0 to 65,535"),
        ("u8", "a whole number from 0 to 255"),
        ("usize", "a whole number of 0 or more"),
        ("i64", "a whole number"),
        ("i32", "a whole number"),
        ("f64", "a number"),
        ("f32", "a number"),
        ("bool", "true or false"),
    ];
    let mut text = error.to_string();
    for (name, words) in TYPES {
        for end in [" ", ""] {
            let rust = format!("expected {name}{end}");
            if text.contains(&rust) && (end == " " || text.ends_with(&rust)) {
                text = text.replace(&rust, &format!("expected {words}{end}"));
            }
        }
    }
    for (kind, words) in [("struct ", "an object"), ("enum ", "one of its names")] {
        while let Some(at) = text.find(&format!("expected {kind}")) {
            let start = at + "expected ".len();
            let name_start = start + kind.len();
            let name_end = text[name_start..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .map_or(text.len(), |e| name_start + e);
            text.replace_range(start..name_end, words);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::is_digest;

    fn empty() -> DigestFile {
        DigestFile::new("runs/rank3.pickle", "memsight test", 1234, None, Vec::new())
    }

    #[test]
    fn a_malformed_digest_is_said_in_words_not_type_names() {
        let good = serde_json::to_string(&empty()).unwrap();
        assert!(good.contains("\"snapshot_bytes\":1234"), "{good}");
        for (bad, words) in [
            (
                "\"snapshot_bytes\":\"lots\"",
                "expected a whole number from 0 to 2^64 \u{2212} 1",
            ),
            (
                "\"snapshot_bytes\":-4",
                "expected a whole number from 0 to 2^64 \u{2212} 1",
            ),
            (
                "\"snapshot_bytes\":1234,\"devices\":7",
                "expected a sequence",
            ),
        ] {
            let text = good.replacen("\"snapshot_bytes\":1234", bad, 1);
            let text = if bad.contains("devices") {
                text.replacen(",\"devices\":[]", "", 1)
            } else {
                text
            };
            let error = read_digest(text.as_bytes()).unwrap_err().to_string();
            assert!(error.contains(words), "{bad}: {error}");
            assert!(
                !error.contains("u64") && !error.contains("struct "),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn a_digest_reads_back_as_written_and_is_known_by_its_first_key() {
        let file = empty();
        let json = file.to_json();
        assert!(json.starts_with("{\"format\":\"memsight-digest\",\"version\":1,"));
        assert!(is_digest(json.as_bytes()));
        assert!(is_digest(
            b" {\n  \"format\" : \"memsight-digest\", \"version\": 1}"
        ));
        // Keys sorted by another tool.
        let sorted = serde_json::to_string(&serde_json::to_value(&file).unwrap()).unwrap();
        assert!(!sorted.starts_with("{\"format\""));
        assert!(is_digest(sorted.as_bytes()));
        assert_eq!(read_digest(sorted.as_bytes()), Ok(file.clone()));
        assert!(!is_digest(b"{\"segments\": [], \"device_traces\": []}"));
        assert!(!is_digest(b"\x80\x04\x95"));
        assert_eq!(read_digest(json.as_bytes()), Ok(file));
    }

    #[test]
    fn a_digest_of_another_version_is_refused_saying_which_is_newer() {
        let newer = empty().to_json().replace("\"version\":1", "\"version\":2");
        let error = read_digest(newer.as_bytes()).unwrap_err();
        assert_eq!(error, DigestError::Version { found: 2 });
        assert!(error
            .to_string()
            .contains("newer than this memsight reads (1)"));
        let older = empty().to_json().replace("\"version\":1", "\"version\":0");
        let error = read_digest(older.as_bytes()).unwrap_err().to_string();
        assert!(
            error.contains("older") && error.contains("memsight digest"),
            "{error}"
        );
        // A newer layout is refused before its unknown contents are read.
        let changed = newer.replace("\"devices\":[]", "\"devices\":{\"0\":\"other\"}");
        assert_eq!(
            read_digest(changed.as_bytes()),
            Err(DigestError::Version { found: 2 })
        );
    }

    #[test]
    fn digests_one_after_another_read_as_a_list_and_the_one_that_cannot_be_read_is_named() {
        let mut other = empty();
        other.name = "runs/rank4.pickle".to_string();
        let both = format!("{}{}", empty().to_json(), other.to_json());
        assert_eq!(read_digests(both.as_bytes()), Ok(vec![empty(), other]));
        let pretty = serde_json::to_string_pretty(&empty()).unwrap();
        assert_eq!(read_digests(pretty.as_bytes()), Ok(vec![empty()]));
        let newer = both.replacen("\"version\":1", "\"version\":2", 2);
        let second = format!("{}{}", empty().to_json(), newer.lines().nth(1).unwrap());
        assert_eq!(
            read_digests(second.as_bytes()),
            Err((2, DigestError::Version { found: 2 }))
        );
        assert!(read_digests(b"  ").is_err());
    }

    #[test]
    fn a_digest_given_where_a_snapshot_is_read_says_what_it_is() {
        let error = crate::decode::decode_bytes(empty().to_json().as_bytes()).unwrap_err();
        assert!(
            error
                .message
                .starts_with("this is a memsight digest, not a snapshot"),
            "{error:?}"
        );
        assert!(error
            .hint
            .as_deref()
            .unwrap_or("")
            .contains("`memsight files`"));
    }

    #[test]
    fn what_is_not_a_digest_says_so() {
        assert!(matches!(
            read_digest(b"{\"segments\": []}"),
            Err(DigestError::NotADigest { .. })
        ));
        assert!(matches!(
            read_digest(b"not json"),
            Err(DigestError::NotADigest { .. })
        ));
        let broken = empty().to_json().replace("\"devices\":[]", "\"devices\":7");
        assert!(matches!(
            read_digest(broken.as_bytes()),
            Err(DigestError::Malformed { .. })
        ));
    }
}
