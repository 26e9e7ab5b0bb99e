//! `memsight`, the command line: the numbers the viewer shows, from the same core, for
//! scripts, CI and files too large for a browser tab.
//!
//! One module per command (`overview`, `categories`, `report`); `open` streams a file into the core and reports a
//! file that cannot be read exactly as the page does. Not the place for any computation: every
//! number comes from `memsight-core`.

mod categories;
mod open;
mod overview;
mod report;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use memsight_core::analysis::categories::rules::Rules;
use memsight_core::analysis::categories::Category;

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
    /// Per device: the bytes alive at one moment by role (parameters, gradients, optimizer
    /// state, activations, temporaries…) and by component (attention, MLP, embedding…).
    Categories {
        /// Snapshot files (`-` for standard input).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// When: `peak` (the allocated peak), `end`, or an event number.
        #[arg(long, default_value = "peak", value_name = "peak|end|EVENT")]
        at: categories::Moment,
        /// A rules file as the page exports it ({"rules": [{"pattern", "regex", "role",
        /// "component"}]}); its rules come before the inference.
        #[arg(long, value_name = "RULES.json")]
        rules: Option<PathBuf>,
        /// Print one JSON object per file, with exact bytes:
        /// {"file": …, "devices": {"<device>": {"roles": {…}, "components": {…}, …}}}.
        #[arg(long)]
        json: bool,
    },
    /// Per device, a Markdown report: the peak, bytes by role and by component at the peak,
    /// the peak estimate, the 50 largest allocations, fragmentation and findings.
    Report {
        /// Snapshot files (`-` for standard input).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Report this device only (default: every device of each file).
        #[arg(long, value_name = "N")]
        device: Option<u32>,
        /// A rules file as the page exports it; its rules come before the inference.
        #[arg(long, value_name = "RULES.json")]
        rules: Option<PathBuf>,
        /// Write the report to this file instead of standard output.
        #[arg(long, short, value_name = "PATH")]
        output: Option<PathBuf>,
        /// With --json: the peak's largest allocations, call sites and sizes of this category
        /// only, as the page lists them when a category is picked (`role:activations`,
        /// `component:attention`…); the bytes by category still count everything.
        #[arg(long, value_name = "role:ROLE|component:COMPONENT", requires = "json")]
        only: Option<Category>,
        /// Print one JSON object per file with the report's numbers, exact:
        /// {"file": …, "devices": {"<device>": {"summary": {…}, "peak": {…}, "efficiency": …}}}.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Overview { files, json } => overview::run(&files, json),
        Command::Categories {
            files,
            at,
            rules,
            json,
        } => {
            let Some(rules) = rules_or_exit(rules) else {
                return ExitCode::from(2);
            };
            let rules = rules.compile().expect("read_rules compiled them");
            categories::run(&files, at, &rules, json)
        }
        Command::Report {
            files,
            device,
            rules,
            output,
            only,
            json,
        } => {
            let Some(rules) = rules_or_exit(rules) else {
                return ExitCode::from(2);
            };
            let output = report::output_path(output);
            let format = match json {
                true => report::Format::Json { only },
                false => report::Format::Markdown,
            };
            report::run(&files, device, &rules, output.as_deref(), format)
        }
    }
}

/// The rules of `path` (none without one); `None` after saying why they cannot be used.
fn rules_or_exit(path: Option<PathBuf>) -> Option<Rules> {
    match path.map(|path| open::read_rules(&path)).transpose() {
        Ok(rules) => Some(rules.unwrap_or_default()),
        Err(why) => {
            eprintln!("memsight: {why}");
            None
        }
    }
}
