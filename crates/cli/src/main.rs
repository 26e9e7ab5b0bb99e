//! `memsight`, the command line: the numbers the viewer shows, from the same core, for
//! scripts, CI and files too large for a browser tab.
//!
//! One module per command (`overview`, `categories`, `report`, `table`, `segments`, `files`,
//! `compare`, `phases`, `digest`, `check`); `open` streams a file into the core and reports a
//! file that cannot be read exactly as the page does. Not the place for any computation: every
//! number comes from `memsight-core`.

#[macro_use]
mod escape;
mod categories;
mod check;
mod compare;
mod digest;
mod files;
mod moment;
mod open;
mod output_names;
mod overview;
mod parallel;
mod phases;
mod report;
mod segments;
mod source;
mod table;
mod written;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use memsight_core::analysis::categories::rules::Rules;
use memsight_core::analysis::categories::{Category, Component, Role};
use memsight_core::analysis::moment::Moment;
use memsight_core::table::{Filter, GroupBy, Scope, Sort, TableQuery};

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
    /// Redact paths in everything printed and written: installed packages as
    /// `site-packages/…`, Python's library as `<python>/…`, home folders as `<home>/…`,
    /// temporary folders as `<tmp>/…`, other absolute paths as `<root>/` and their last two
    /// parts; user names found in those paths as `<user>`. The same file groups and compares
    /// with the same numbers.
    #[arg(long, global = true)]
    redact: bool,
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
        #[arg(long, default_value = "peak", value_name = "peak|end|EVENT", value_parser = moment::parse)]
        at: Moment,
        #[command(flatten)]
        rules: RulesArg,
        /// Print one JSON object per file, with exact bytes:
        /// {"file": …, "devices": {"<device>": {"roles": {…}, "components": {…}, …}}}.
        #[arg(long)]
        json: bool,
    },
    /// Per device, a Markdown report: the peak, bytes by role and by component at the peak,
    /// the peak estimate, the 50 largest allocations, fragmentation and findings. With
    /// `--output DIR`, a folder of reports for docs and CI: per file, a self-contained HTML
    /// page (with the overview and the charts) and its Markdown, and with several files a
    /// summary across them (index.html, summary.md). A digest (`memsight digest`) gets what a
    /// digest holds: bytes by role, component, call site and module at the peak, and the
    /// overview; in a folder's summary, the same row as its snapshot.
    Report {
        /// Snapshot or digest files (`-` for standard input).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Report this device only (default: every device of each file).
        #[arg(long, value_name = "N|host", value_parser = device_arg)]
        device: Option<u32>,
        #[command(flatten)]
        rules: RulesArg,
        /// Where the reports go. A path ending in `.md` (or any path with --json): that one
        /// file, as standard output would show it. Any other path: a folder (made if missing)
        /// of reports, one NAME.html and NAME.md per file, named after each file's path below
        /// the folders all files share (`iteration_3/rank5.pickle` → `iteration_3__rank5`),
        /// plus, for several files, index.html and summary.md: the files table across them
        /// (ranks and iterations read from the names, outliers flagged) linking to each report.
        #[arg(long, short, value_name = "FILE.md|DIR")]
        output: Option<PathBuf>,
        /// With a report folder: how many files are read at once (each file is decoded,
        /// reported and dropped before the next; default: the machine's cores).
        #[arg(long, short, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        jobs: Option<u32>,
        /// With --json: the peak's largest allocations, call sites and sizes of this category
        /// only, as the page lists them when a category is picked (`role:activations`,
        /// `component:attention`…); the bytes by category still count everything.
        #[arg(long, value_name = "role:ROLE|component:COMPONENT", requires = "json")]
        only: Option<Category>,
        /// Print one JSON object per file with the report's numbers, exact:
        /// {"file": …, "devices": {"<device>": {"summary": {…}, "peak": {…}, "efficiency_at_peak": …}}}.
        #[arg(long)]
        json: bool,
    },
    /// Per device, the caching allocator's segments at one moment, as the page's allocator
    /// state shows them: totals, fragmentation and every segment with its blocks.
    Segments {
        /// Snapshot files (`-` for standard input).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// This device only (default: every device of each file).
        #[arg(long, value_name = "N|host", value_parser = device_arg)]
        device: Option<u32>,
        /// When: `peak` (the allocated peak), `end`, or an event number.
        #[arg(long, default_value = "peak", value_name = "peak|end|EVENT", value_parser = moment::parse)]
        at: Moment,
        /// The order of the segments: `address`, or largest first by `size`, `cached-free`
        /// or `largest-free` (the largest free block).
        #[arg(long, default_value = "address", value_name = "ORDER")]
        sort: memsight_core::analysis::allocator::SegmentOrder,
        /// Print one JSON object per file: {"file", "devices": {"<device>": {"state", "totals":
        /// {…}, "segment_count", "segments": [{"address", "size", "blocks": […], "totals"}]}}}.
        #[arg(long)]
        json: bool,
    },
    /// The source files of the code holding memory at a moment, each line with the bytes made
    /// there (its call-site group in the table) and passing through it, each function's total.
    /// The text comes from the snapshot's `source_code`, else from --root.
    Source {
        /// Snapshot files (`-` for standard input).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// A checkout of the code: its `.py` files are matched to the snapshot's paths by
        /// their longest shared end.
        #[arg(long, value_name = "DIR")]
        root: Option<PathBuf>,
        /// This device only (default: every device of each file).
        #[arg(long, value_name = "N|host", value_parser = device_arg)]
        device: Option<u32>,
        /// Which allocations: alive at the `peak`, at the `end`, after an event number, or
        /// `all` of them.
        #[arg(long, default_value = "peak", value_name = "peak|end|all|EVENT", value_parser = table::parse_scope)]
        at: Scope,
        /// Only files whose path contains this text.
        #[arg(long, value_name = "TEXT")]
        file: Option<String>,
        #[command(flatten)]
        rules: RulesArg,
        /// Each file as a Markdown section with its lines in a code block.
        #[arg(long, conflicts_with = "json")]
        markdown: bool,
        /// Print one JSON object per file: {"file", "devices": {"<device>": {"files": [{"path",
        /// "source", "made", "through", "functions", "lines": [{"line", "function", "made":
        /// {"count", "bytes"}, "through"}]}]}}}.
        #[arg(long)]
        json: bool,
    },
    /// Per device, the allocations table as the page shows it: every allocation of a scope
    /// (alive at the peak, at the end, after an event, or all), filtered, sorted, and grouped
    /// when asked (by call site, stack, file, role, component, phase or model module).
    Table {
        /// Snapshot files (`-` for standard input).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// This device only (default: every device of each file).
        #[arg(long, value_name = "N|host", value_parser = device_arg)]
        device: Option<u32>,
        /// Which allocations: alive at the `peak`, at the `end`, after an event number, or
        /// `all` of them.
        #[arg(long, default_value = "peak", value_name = "peak|end|all|EVENT", value_parser = table::parse_scope)]
        scope: Scope,
        /// Group rows into a tree (groups come largest first).
        #[arg(long, value_name = "callsite|stack|file|role|component|phase|module")]
        group_by: Option<GroupBy>,
        /// Sort rows by a column (size, requested, address, stream, role, component, phase,
        /// allocated, freed, lifetime, top_frame), descending unless `:asc`.
        #[arg(long, default_value = "size:desc", value_name = "COLUMN[:asc|desc]", value_parser = table::parse_sort)]
        sort: Sort,
        /// Only allocations with a frame whose file or function contains this text (any
        /// case), or containing this address (`0x7f…`).
        #[arg(long, value_name = "TEXT")]
        filter: Option<String>,
        /// --filter is a regular expression matched against each frame's `file:line:name`.
        #[arg(long, requires = "filter")]
        regex: bool,
        /// Only requests of at least this size (`1048576`, `512KiB`, `1.5MiB`).
        #[arg(long, value_name = "SIZE", value_parser = table::parse_size)]
        min_bytes: Option<u64>,
        /// Only requests of at most this size.
        #[arg(long, value_name = "SIZE", value_parser = table::parse_size)]
        max_bytes: Option<u64>,
        /// Only this role (`activations`, `parameters`…).
        #[arg(long, value_parser = table::parse_role)]
        role: Option<Role>,
        /// Only this component (`attention`, `mlp`…).
        #[arg(long, value_parser = table::parse_component)]
        component: Option<Component>,
        /// Only this stream (the raw `cudaStream_t` value).
        #[arg(long)]
        stream: Option<u64>,
        #[command(flatten)]
        rules: RulesArg,
        /// Lines shown as text.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Write CSV: a header row, then every row (`requested_bytes`, `size_bytes`… exact) or,
        /// grouped, every group.
        #[arg(long, conflicts_with = "json")]
        csv: bool,
        /// Print one JSON object per file: {"file", "devices": {"<device>": {"totals": {…},
        /// "rows": […]}}} (or "groups" when grouped), every number exact.
        #[arg(long)]
        json: bool,
    },
    /// One row per file and device: peak allocated and reserved, allocated and reserved at
    /// the end, efficiency at the peak, trace entries, time span, the bytes of each role at the
    /// peak; ranks, iterations and the settings that tell the files apart (`ctx512`, `bs8`)
    /// read from the names (`iteration_3/rank5_…`), outlier ranks flagged. Markdown by default.
    Files {
        /// Snapshot files (`-` for standard input).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Sort by a column (`peak_allocated_bytes`, `rank`, `file`, `activations_at_peak_bytes`,
        /// a setting such as `ctx`…), descending unless `:asc`; default: by file name as people
        /// read them (`rank2` before `rank10`).
        #[arg(long, value_name = "COLUMN[:asc|desc]", value_parser = files::parse_sort)]
        sort: Option<files::FilesSort>,
        #[command(flatten)]
        rules: RulesArg,
        /// Print the table as Markdown, in binary units (the default).
        #[arg(long, conflicts_with_all = ["csv", "json"])]
        markdown: bool,
        /// Print CSV with exact values (bytes, µs, parts per million).
        #[arg(long, conflicts_with = "json")]
        csv: bool,
        /// Print {"files": [{"name", "label", "device", "rank", "iteration",
        /// "peak_allocated_bytes", …, "roles_at_peak": […], "outlier", "peak_event",
        /// "peak_at_events_ppm", "peak_at_time_ppm"}]}, exact: where each run's peak falls as
        /// the page's chart of every run places it.
        #[arg(long)]
        json: bool,
        /// With --json: also each run's allocated curve as that chart draws it,
        /// "curve_over_events_bytes" and "curve_over_time_bytes" (null without times).
        #[arg(long, requires = "json")]
        curves: bool,
    },
    /// Per device, the phase report: each `record_function` scope (or, when the file has
    /// none, each phase of each iteration inferred from the frames: setup, forward, backward,
    /// optimizer step) with the allocated bytes before and after it, its delta, what it
    /// allocated and freed, its peak and the role holding most there. Markdown by default.
    Phases {
        /// Snapshot files (`-` for standard input).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// This device only (default: every device of each file).
        #[arg(long, value_name = "N|host", value_parser = device_arg)]
        device: Option<u32>,
        #[command(flatten)]
        rules: RulesArg,
        /// Print Markdown (the default).
        #[arg(long, conflicts_with = "json")]
        markdown: bool,
        /// Print one JSON object per file: {"file", "devices": {"<device>": {"source",
        /// "rows": [{"label", "phase", "iteration", "depth", "first_event", "last_event",
        /// "before_bytes", "after_bytes", "delta_bytes", "allocated_bytes", "freed_bytes",
        /// "peak_bytes", "peak_event", "reserved_at_peak_bytes", "top_role", "top_role_bytes"}],
        /// "generation"}}}, exact.
        #[arg(long)]
        json: bool,
    },
    /// Memory budgets for CI: every device of every file (snapshots or digests) against the
    /// limits given, and against running out of memory: exit code 0 when all are within them,
    /// 1 when any is not or any trace recorded an out-of-memory error (one line per breach,
    /// failing devices first, then each limit with its headroom), 2 when a file or the
    /// baseline cannot be read. Sizes in binary units (`40GiB`;
    /// `GB` is read as GiB).
    Check {
        /// Snapshot or digest files (`-` for standard input).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Allocated memory at its peak.
        #[arg(long, value_name = "SIZE", value_parser = table::parse_size)]
        max_peak: Option<u64>,
        /// Reserved memory at its peak.
        #[arg(long, value_name = "SIZE", value_parser = table::parse_size)]
        max_reserved: Option<u64>,
        /// Lowest efficiency at the peak (allocated / reserved), in percent.
        #[arg(long, value_name = "PCT", value_parser = check::parse_percent)]
        min_efficiency: Option<u64>,
        /// Largest share of the peak whose role is unknown, in percent.
        #[arg(long, value_name = "PCT", value_parser = check::parse_percent)]
        max_unknown: Option<u64>,
        /// Most bytes of one role at the peak (`activations=12GiB`); repeat for more roles.
        #[arg(long = "max", value_name = "ROLE=SIZE", value_parser = check::parse_role_limit)]
        max_role: Vec<memsight_core::compare::budget::RoleBytes>,
        /// Earlier digests to compare with: a file of digests (as --write-baseline or
        /// `memsight digest` write it), a folder of digests, or a snapshot. Each device is
        /// matched by rank, else by file name, else (a baseline of one file) by device.
        #[arg(long, value_name = "BASELINE")]
        baseline: Option<PathBuf>,
        /// Most growth against the baseline, in percent: of the peak allocated and reserved
        /// memory over the baseline's, and of any role's bytes at the peak over the baseline's
        /// peak allocated.
        #[arg(long, value_name = "PCT", value_parser = check::parse_percent, requires = "baseline")]
        max_growth: Option<u64>,
        /// Pass a device whose trace recorded an out-of-memory error if it is within the
        /// limits (by default any out-of-memory fails the check, naming the request that
        /// failed).
        #[arg(long)]
        allow_oom: bool,
        /// Also write the files' digests, one per line, as a baseline for a later check.
        #[arg(long, value_name = "FILE")]
        write_baseline: Option<PathBuf>,
        #[command(flatten)]
        rules: RulesArg,
        /// Print the verdict, the breaches and every device's figures as Markdown (for a CI
        /// job's summary).
        #[arg(long, conflicts_with = "json")]
        markdown: bool,
        /// Print the verdict and every figure checked as one JSON object, exact: {"pass",
        /// "budgets", "devices": [{"file", "rank", "device", "peak_allocated_bytes", …,
        /// "growth", "breaches": [{"checked", "value", "limit", …}]}]}.
        #[arg(long)]
        json: bool,
        /// How many files are read at once (default: the machine's cores).
        #[arg(long, short, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        jobs: Option<u32>,
    },
    /// Each snapshot as a digest (kilobytes; a few hundred for thousands of call sites): every
    /// device's overview numbers, bytes by role and component, call sites and model modules at
    /// its peak, and its curve — what `files`, `compare`, `report` and `check` read in place of
    /// the snapshot. Each rank can
    /// write its own where it ran, so only digests travel. Versioned: a digest of another
    /// version is refused with a message, never misread.
    Digest {
        /// Snapshot files (`-` for standard input).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Where digests go: a path ending in `.json` for one file; any other path is a folder
        /// (made if missing) of NAME.digest.json, named as report folders name files
        /// (`iteration_3/rank5.pickle` → `iteration_3__rank5.digest.json`). Default: standard
        /// output, one line per file.
        #[arg(long, short, value_name = "DIR|FILE.json")]
        output: Option<PathBuf>,
        /// How many files are read at once (default: the machine's cores).
        #[arg(long, short, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        jobs: Option<u32>,
        #[command(flatten)]
        rules: RulesArg,
    },
    /// Two files (or two devices of one) side by side: the overview's numbers with deltas
    /// (B − A), bytes by role and component at both peaks, and the call sites and model
    /// modules whose bytes at the peak changed, new or vanished.
    Compare {
        /// The first file (A).
        #[arg(value_name = "A")]
        a: PathBuf,
        /// The second file (B); the same file again to compare two of its devices.
        #[arg(value_name = "B")]
        b: PathBuf,
        /// A's device (default: the one the page shows first).
        #[arg(long, value_name = "N|host", value_parser = device_arg)]
        device_a: Option<u32>,
        /// B's device (default: the one the page shows first).
        #[arg(long, value_name = "N|host", value_parser = device_arg)]
        device_b: Option<u32>,
        /// Set each run's peak within this phase of training side by side (forward,
        /// backward, optimizer_step, zero_grad, setup) instead of each run's own peak, which
        /// may fall in different phases; a run without that phase keeps its peak.
        #[arg(long, value_name = "PHASE", value_parser = parse_phase)]
        at_phase: Option<memsight_core::analysis::categories::signals::Phase>,
        #[command(flatten)]
        rules: RulesArg,
        /// Print one JSON object: {"a", "b", "comparison": {"metrics": [{"key", "a", "b",
        /// "delta"}], "roles", "components": [{"key", "a_bytes", "b_bytes", "delta_bytes"}],
        /// "call_sites", "modules": [{"key", "label", …, "delta_bytes", "change"}]}}, exact.
        #[arg(long)]
        json: bool,
    },
}

/// A phase of training by its key (`optimizer_step`).
fn parse_phase(key: &str) -> Result<memsight_core::analysis::categories::signals::Phase, String> {
    use memsight_core::analysis::categories::signals::Phase;
    Phase::from_key(key)
        .filter(|p| *p != Phase::Other)
        .ok_or_else(|| "expected forward, backward, optimizer_step, zero_grad or setup".to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.redact {
        open::redact_from_now();
    }
    match cli.command {
        Command::Overview { files, json } => overview::run(&files, json),
        Command::Categories {
            files,
            at,
            rules,
            json,
        } => {
            let rules = rules.chosen();
            let rules = rules.compile().expect("read_rules compiled them");
            categories::run(&files, at, &rules, json)
        }
        Command::Report {
            files,
            device,
            rules,
            output,
            jobs,
            only,
            json,
        } => {
            let rules = rules.chosen();
            let format = match json {
                true => report::ReportFormat::Json { only },
                false => report::ReportFormat::Markdown,
            };
            match report::Destination::of(output, json) {
                report::Destination::Print => report::run(&files, device, &rules, None, format),
                report::Destination::File(path) => {
                    report::run(&files, device, &rules, Some(&path), format)
                }
                report::Destination::Folder(folder) => {
                    report::folder::run(&files, device, &rules, &folder, jobs_or_cores(jobs))
                }
            }
        }
        Command::Segments {
            files,
            device,
            at,
            sort,
            json,
        } => segments::run(&files, device, at, sort, json),
        Command::Source {
            files,
            root,
            device,
            at,
            file,
            rules,
            markdown,
            json,
        } => {
            let rules = rules.chosen();
            let root = match root.as_deref().map(source::SourceRoot::read).transpose() {
                Ok(root) => root,
                Err(e) => {
                    say!("memsight: {e}");
                    return ExitCode::from(2);
                }
            };
            let output = match (markdown, json) {
                (_, true) => source::SourceOutput::Json,
                (true, _) => source::SourceOutput::Markdown,
                _ => source::SourceOutput::Text,
            };
            let query = source::SourceQuery {
                device,
                scope: at,
                root: root.as_ref(),
                only: file.as_deref(),
                output,
            };
            source::run(&files, &rules, &query)
        }
        Command::Table {
            files,
            device,
            scope,
            group_by,
            sort,
            filter,
            regex,
            min_bytes,
            max_bytes,
            role,
            component,
            stream,
            rules,
            limit,
            csv,
            json,
        } => {
            let rules = rules.chosen();
            let query = TableQuery {
                scope,
                filter: Filter {
                    text: filter.unwrap_or_default(),
                    regex,
                    min_bytes,
                    max_bytes,
                    role,
                    component,
                    stream,
                },
                sort,
                group_by,
            };
            let output = match (csv, json) {
                (true, _) => table::TableOutput::Csv,
                (_, true) => table::TableOutput::Json,
                _ => table::TableOutput::Text { limit },
            };
            table::run(&files, device, &rules, &query, output)
        }
        Command::Files {
            files,
            sort,
            rules,
            markdown: _,
            csv,
            json,
            curves,
        } => {
            let rules = rules.chosen();
            let output = match (csv, json) {
                (true, _) => files::FilesOutput::Csv,
                (_, true) => files::FilesOutput::Json { curves },
                _ => files::FilesOutput::Markdown,
            };
            files::run(&files, &rules, sort, output)
        }
        Command::Phases {
            files,
            device,
            rules,
            markdown: _,
            json,
        } => {
            let rules = rules.chosen();
            phases::run(&files, device, &rules, json)
        }
        Command::Compare {
            a,
            b,
            device_a,
            device_b,
            at_phase,
            rules,
            json,
        } => {
            let rules = rules.chosen();
            compare::run(&a, &b, (device_a, device_b), at_phase, &rules, json)
        }
        Command::Check {
            files,
            max_peak,
            max_reserved,
            min_efficiency,
            max_unknown,
            max_role,
            baseline,
            max_growth,
            allow_oom,
            write_baseline,
            rules,
            markdown,
            json,
            jobs,
        } => {
            let rules = rules.chosen();
            let budgets = memsight_core::compare::budget::Budgets {
                max_peak_bytes: max_peak,
                max_reserved_bytes: max_reserved,
                min_efficiency_ppm: min_efficiency,
                max_unknown_ppm: max_unknown,
                max_role_bytes: max_role,
                max_growth_ppm: max_growth,
                allow_oom,
            };
            let output = match (markdown, json) {
                (true, _) => check::CheckOutput::Markdown,
                (_, true) => check::CheckOutput::Json,
                _ => check::CheckOutput::Text,
            };
            check::run(
                &files,
                &budgets,
                baseline.as_deref(),
                write_baseline.as_deref(),
                &rules,
                output,
                jobs_or_cores(jobs),
            )
        }
        Command::Digest {
            files,
            output,
            jobs,
            rules,
        } => {
            let rules = rules.chosen();
            digest::run(
                &files,
                &rules,
                digest::DigestDestination::of(output),
                jobs_or_cores(jobs),
            )
        }
    }
}

/// `--jobs` as given, else the machine's cores.
fn jobs_or_cores(jobs: Option<u32>) -> usize {
    jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |n| n as usize,
    )
}

/// `--rules`, for every command that categorises.
#[derive(clap::Args)]
struct RulesArg {
    /// A rules file as the page exports it ({"rules": [{"pattern", "regex", "role",
    /// "component"}]}): its rules set roles and components before the inference does.
    #[arg(long, value_name = "RULES.json", value_parser = rules_file)]
    rules: Option<Rules>,
}

impl RulesArg {
    /// The rules given, or none.
    fn chosen(self) -> Rules {
        self.rules.unwrap_or_default()
    }
}

/// The rules of a file named on the command line, or why they cannot be used (clap then
/// exits with code 2).
fn rules_file(path: &str) -> Result<Rules, String> {
    open::read_rules(std::path::Path::new(path))
}

/// A device as the options name it: its index, or `host` for pinned host memory.
fn device_arg(text: &str) -> Result<u32, String> {
    match text {
        "host" => Ok(memsight_core::model::PINNED_HOST_DEVICE),
        index => index
            .parse()
            .map_err(|_| format!("`{index}` is no device: a device index, or `host`")),
    }
}
