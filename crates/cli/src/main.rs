//! `memsight`, the command line: the numbers the viewer shows, from the same core, for
//! scripts, CI and files too large for a browser tab.
//!
//! One module per command (`overview`); `open` streams a file into the core and reports a
//! file that cannot be read exactly as the page does. Not the place for any computation: every
//! number comes from `memsight-core`.

mod open;
mod overview;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "memsight",
    version,
    about = "Read PyTorch CUDA memory snapshots (torch.cuda.memory._dump_snapshot() pickles, \
             gzipped or not, or their JSON form) and print what the memsight viewer shows.",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Per device: peak and final allocated and reserved memory, efficiency, counts, time
    /// span, the PyTorch era, allocator settings and warnings.
    Overview {
        /// Snapshot files (`-` for standard input); each is streamed, never read whole.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Print one JSON object per file, with every number exact:
        /// {"file": …, "devices": {"<device>": {"<metric key>": <value>, …}}, …}.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Overview { files, json } => overview::run(&files, json),
    }
}
