//! Files the commands write (a baseline, a report, digests, a report folder's pages): only
//! where nothing is yet or a regular file is. A named pipe there would block the command
//! forever and a device would be written to, so either is refused with the path and what it
//! is, before any input is read when the path is known by then. Not the place for files read
//! ([`crate::open`]) or for what is written in them.

use std::fs::File;
use std::io::{ErrorKind, Write};
use std::path::Path;
use std::process::ExitCode;

use crate::open::{regular_file, what_it_is};

/// Exit code when an output cannot be written where it was asked to go.
pub const CANNOT_WRITE: u8 = 2;

/// `Err` with why when something other than a regular file is at `path` (links followed);
/// nothing there is `Ok`, and so is what cannot be looked at, which the write then reports.
pub fn writable(path: &Path) -> Result<(), String> {
    std::fs::metadata(path).map_or(Ok(()), |metadata| regular_file(&metadata))
}

/// Says why the first of `paths` that cannot take an output is refused, and the exit code to
/// end with; checked up front so a command refuses before it reads its inputs.
pub fn refuse_unwritable<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Result<(), ExitCode> {
    for path in paths {
        if let Err(why) = writable(path) {
            say!("memsight: {}: cannot be written: {why}", path.display());
            return Err(ExitCode::from(CANNOT_WRITE));
        }
    }
    Ok(())
}

/// Makes the folder `folder` (and those it is in) unless it is there; `Err` with why, naming
/// what is there instead of a folder (the system's "File exists" says neither).
pub fn make_folder(folder: &Path) -> Result<(), String> {
    if let Ok(metadata) = std::fs::metadata(folder) {
        if !metadata.is_dir() {
            return Err(format!(
                "it is {}, not a folder",
                what_it_is(&metadata.file_type())
            ));
        }
    }
    std::fs::create_dir_all(folder).map_err(|e| e.to_string())
}

/// Writes `bytes` to the file at `path`, made or replaced, when it is (or will be) a regular
/// file: checked before it is opened, so a named pipe is never opened (which would wait for a
/// reader), and again once open, before a byte is written.
pub fn write_regular(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let refused = |why: String| std::io::Error::new(ErrorKind::InvalidInput, why);
    writable(path).map_err(refused)?;
    let mut file = File::create(path)?;
    regular_file(&file.metadata()?).map_err(refused)?;
    file.write_all(bytes)
}
