//! `memsight digest FILE… [--output DIR|FILE.json] [--jobs N] [--rules RULES.json]`: each
//! snapshot reduced to a versioned digest of kilobytes (the core's
//! [`DigestFile`]) — what the files table, a comparison, a report's summary and a budget
//! check need — so that a job's ranks each write theirs where they ran and only digests
//! travel. Also where the commands that read digests turn any input into one.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use memsight_core::analysis::categories::rules::Rules;
use memsight_core::compare::digest::digest;
use memsight_core::compare::digest_file::DigestFile;
use memsight_core::decode::ErrorReport;
use memsight_core::format;

use crate::escape::escape_json;
use crate::open::{
    describe_error, open_input, redacting, shown, with_context, Opened, SnapshotOrDigests,
};
use crate::output_names::report_names;
use crate::parallel::parallel_map;
use crate::written::{make_folder, refuse_unwritable, write_regular};

/// What wrote a digest.
pub const WRITER: &str = concat!("memsight ", env!("CARGO_PKG_VERSION"));

/// The digest of every device of an opened snapshot, named `name`, under `rules`; with each
/// device's call sites and modules at its peak when `detail` is set (a digest file always has
/// them; the files table needs none).
pub fn file_digest(name: &str, opened: &Opened, rules: &Rules, detail: bool) -> DigestFile {
    let devices = with_context(opened, rules, None, |cx, devices| {
        devices
            .into_iter()
            .filter_map(|d| digest(cx, d, detail, None).ok())
            .collect()
    });
    let default_device = opened.analysed.default_device().map(|(d, _)| d);
    let mut file = DigestFile::new(name, WRITER, opened.file_bytes, default_device, devices);
    file.redacted = redacting();
    file
}

/// `path` as digests: read as they are when it holds digests (one, or several one after
/// another), else one made from the snapshot. A digest keeps the roles it was written with,
/// so `rules` cannot change them (said once per file).
pub fn read_as_digests(
    path: &Path,
    rules: &Rules,
    detail: bool,
    progress: bool,
) -> Result<Vec<DigestFile>, ErrorReport> {
    match open_input(path, progress)? {
        SnapshotOrDigests::Snapshot(opened) => {
            Ok(vec![file_digest(&shown(path), &opened, rules, detail)])
        }
        SnapshotOrDigests::Digests(files) => {
            say_rules_do_not_apply(path, rules);
            Ok(files)
        }
    }
}

/// Says (on standard error) that `rules` leave the digest at `path` as it was written.
pub fn say_rules_do_not_apply(path: &Path, rules: &Rules) {
    if !rules.rules.is_empty() {
        say!(
            "memsight: {}: a digest keeps the roles it was written with; --rules applies to \
             snapshots only",
            path.display()
        );
    }
}

/// Where digests go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DigestDestination {
    /// Standard output, one line per file.
    Print,
    /// One file (`*.json`), for one input.
    File(PathBuf),
    /// A folder (made if missing) of `NAME.digest.json`, named as report folders name files.
    Folder(PathBuf),
}

impl DigestDestination {
    pub fn of(output: Option<PathBuf>) -> Self {
        match output {
            None => DigestDestination::Print,
            Some(path) if path.as_os_str() == "-" => DigestDestination::Print,
            Some(path)
                if path
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("json")) =>
            {
                DigestDestination::File(path)
            }
            Some(path) => DigestDestination::Folder(path),
        }
    }
}

/// Writes the digest of each of `files`, `jobs` at a time. Exit code 1 when a file could not
/// be read (the others are still written), 2 when the destination cannot take them.
pub fn run(files: &[PathBuf], rules: &Rules, output: DigestDestination, jobs: usize) -> ExitCode {
    if let DigestDestination::File(path) = &output {
        if files.len() > 1 {
            say!(
                "memsight: {}: {} digests go to a folder, not one file (name a folder without \
                 .json)",
                path.display(),
                files.len()
            );
            return ExitCode::from(2);
        }
    }
    if let DigestDestination::Folder(folder) = &output {
        if let Err(e) = make_folder(folder) {
            say!(
                "memsight: {}: the digest folder cannot be made: {e}",
                folder.display()
            );
            return ExitCode::from(2);
        }
    }
    let names = report_names(&files.iter().map(|p| shown(p)).collect::<Vec<_>>());
    let targets: Vec<PathBuf> = match &output {
        DigestDestination::Print => Vec::new(),
        DigestDestination::File(target) => vec![target.clone()],
        DigestDestination::Folder(folder) => names
            .iter()
            .map(|named| folder.join(format!("{}.digest.json", named.file)))
            .collect(),
    };
    if let Err(code) = refuse_unwritable(targets.iter().map(PathBuf::as_path)) {
        return code;
    }
    let progress = files.len() == 1;
    let digests = parallel_map(files, jobs, |path| {
        read_as_digests(path, rules, true, progress)
    });
    let mut failed = false;
    let mut written = 0usize;
    for (i, (path, digests)) in files.iter().zip(digests).enumerate() {
        let json: String = match digests {
            Ok(files) => files.iter().map(DigestFile::to_json).collect(),
            Err(report) => {
                failed = true;
                say!("{}", describe_error(path, &report));
                continue;
            }
        };
        let Some(target) = targets.get(i) else {
            print!("{}", escape_json(&json));
            continue;
        };
        if let Err(e) = write_regular(target, escape_json(&json).as_bytes()) {
            say!("memsight: {}: cannot be written: {e}", target.display());
            return ExitCode::from(2);
        }
        written += 1;
    }
    if let DigestDestination::Folder(folder) | DigestDestination::File(folder) = &output {
        let digests = format::counted(written as u64, "digest", "digests");
        say!("Wrote {digests} to {}", folder.display());
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_ending_in_json_is_one_file_and_any_other_a_folder() {
        let of = |p: &str| DigestDestination::of(Some(PathBuf::from(p)));
        assert_eq!(DigestDestination::of(None), DigestDestination::Print);
        assert_eq!(of("-"), DigestDestination::Print);
        assert_eq!(
            of("rank3.JSON"),
            DigestDestination::File("rank3.JSON".into())
        );
        assert_eq!(of("digests"), DigestDestination::Folder("digests".into()));
    }
}
