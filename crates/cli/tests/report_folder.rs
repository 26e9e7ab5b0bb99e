//! `memsight report FILE… -o DIR`: the report pages' numbers against `memsight overview
//! --json` on every real fixture (each `data-metric` of each device) with their role and
//! component tables adding up to the peak; a folder of ranks summed up across ranks and
//! iterations, linking to each report, as `memsight files` tabulates them; a bad file failing
//! with the page's message while the others are written; the same files whatever `--jobs`;
//! and a hostile file name and call site only ever escaped.

mod command;
#[path = "../../core/tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use command::{assert_succeeded, json_lines, memsight};
use common::{real_fixtures_dir, repo};
use serde_json::Value;

/// A fresh folder under the system's temporary folder.
fn temp_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("memsight-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `memsight report` with `args`, into `out`.
fn report_into(out: &Path, args: &[&str], files: &[PathBuf]) -> Output {
    let mut all = vec!["report", "-o", out.to_str().unwrap()];
    all.extend_from_slice(args);
    memsight(&all, files)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The value of every `data-NAME="…"` attribute in `html`, in order.
fn attribute_values<'a>(html: &'a str, name: &str) -> Vec<&'a str> {
    let needle = format!(" data-{name}=\"");
    html.match_indices(&needle)
        .map(|(at, _)| {
            let rest = &html[at + needle.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect()
}

/// Each device's section of a report page: its device and its HTML.
fn device_sections(html: &str) -> Vec<(String, &str)> {
    html.split("<section data-device=\"")
        .skip(1)
        .map(|part| {
            let (device, rest) = part.split_once('"').unwrap();
            (
                device.to_string(),
                &rest[..rest.find("</section>").unwrap()],
            )
        })
        .collect()
}

/// The first table after the heading `title` in `html`.
fn table_after<'a>(html: &'a str, title: &str) -> &'a str {
    let at = html
        .find(&format!(">{title}</h2>"))
        .unwrap_or_else(|| panic!("no {title}"));
    let rest = &html[at..];
    let start = rest.find("<table>").unwrap();
    &rest[start..start + rest[start..].find("</table>").unwrap()]
}

/// The rows of an HTML table.
fn rows(table: &str) -> Vec<&str> {
    table.split("<tr").skip(2).collect()
}

/// The exact bytes of a row of a category table (its first `data-bytes`).
fn row_bytes(row: &str) -> u64 {
    attribute_values(row, "bytes")[0].parse().unwrap()
}

/// Every snapshot and profiler output in the real corpus, its subfolders too, sorted.
fn real_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(real_files(&path));
        } else if path.extension().is_some_and(|e| e != "md") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// What a file in the real corpus's folder is called in the report folder: its path below the
/// corpus, folders joined by `__`, without extensions, in safe characters.
fn report_name(dir: &Path, file: &Path) -> String {
    let below = file
        .strip_prefix(dir)
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let mut name = below.replace('/', "__");
    for ext in [".gz", ".json", ".trace", ".pt", ".raw", ".pickle", ".pkl"] {
        if let Some(stem) = name.strip_suffix(ext) {
            name = stem.to_string();
        }
    }
    name.chars()
        .map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '-' | '_' | '.' => c,
            _ => '_',
        })
        .collect()
}

#[test]
fn every_real_report_page_has_the_overviews_numbers_and_its_tables_add_up() {
    let Some(dir) = real_fixtures_dir() else {
        eprintln!("skipped: the real fixtures are not beside the repository");
        return;
    };
    let files = real_files(&dir);
    let out = temp_dir("real-reports");
    let output = report_into(&out, &[], &files);
    assert_succeeded(&output);
    let overviews = memsight(&["overview", "--json"], &files);
    assert_succeeded(&overviews);
    let (mut metrics, mut devices) = (0, 0);
    for (file, overview) in files.iter().zip(json_lines(&overviews)) {
        let name = report_name(&dir, file);
        let html = read(&out.join(format!("{name}.html")));
        let markdown = read(&out.join(format!("{name}.md")));
        assert!(!html.contains("<script"), "{name}");
        assert!(
            html.contains("http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';")
        );
        assert!(
            markdown.starts_with("[← All files](summary.md)\n\n# Memory report: "),
            "{name}"
        );
        let shown = file.display().to_string().replace('&', "&amp;");
        assert!(
            html.contains(&format!("<h1>Memory report: {shown}")),
            "{name}"
        );
        let sections = device_sections(&html);
        let want = overview["devices"].as_object().unwrap();
        // A device with no segments and no trace entries is one line, not a section.
        let used = |device: &str| {
            ["segment-count", "trace-entries"]
                .iter()
                .any(|key| want[device][*key].as_u64() != Some(0))
        };
        assert_eq!(
            sections.iter().map(|(d, _)| d.as_str()).collect::<Vec<_>>(),
            want.keys()
                .map(String::as_str)
                .filter(|d| used(d))
                .collect::<Vec<_>>(),
            "{name}: devices"
        );
        if want.keys().any(|d| !used(d)) {
            assert!(
                markdown.contains("used no memory: no segments and no trace entries."),
                "{name}"
            );
        }
        for (device, section) in &sections {
            let context = format!("{name} cuda:{device}");
            let want = want[device].as_object().unwrap();
            let keys = attribute_values(section, "metric");
            let values = attribute_values(section, "value");
            assert_eq!(keys.len(), want.len(), "{context}: every metric shown");
            for (key, value) in keys.iter().zip(&values) {
                assert_eq!(
                    Some(value.parse::<u64>().unwrap()),
                    want[*key].as_u64(),
                    "{context}: {key}"
                );
                metrics += 1;
            }
            let peak = want["peak-allocated-bytes"].as_u64().unwrap();
            for title in ["By role at the peak", "By component at the peak"] {
                let table = table_after(section, title);
                let (total, categories) = rows(table)
                    .split_last()
                    .map(|(t, c)| (*t, c.to_vec()))
                    .unwrap();
                assert!(
                    total.starts_with(" data-total=\"true\""),
                    "{context}: {total}"
                );
                let sum: u64 = categories.iter().map(|r| row_bytes(r)).sum();
                assert_eq!(sum, peak, "{context}: {title} rows");
                assert_eq!(row_bytes(total), peak, "{context}: {title} total");
            }
            for chart in ["roles", "components"] {
                let figure = format!("<figure class=\"chart pie\" data-chart=\"{chart}\"");
                let at = section
                    .find(&figure)
                    .unwrap_or_else(|| panic!("{context}: {chart}"));
                assert!(
                    section[at..].contains("<svg width=\"560\" height=\"260\""),
                    "{context}"
                );
            }
            devices += 1;
        }
    }
    assert!(devices > 30, "only {devices} devices");
    assert!(metrics > 500, "only {metrics} metrics");
    let summary = read(&out.join("summary.md"));
    assert!(summary.starts_with("# Memory reports\n"), "{summary}");
    let _ = std::fs::remove_dir_all(&out);
}

/// Copies `from` to `dir/to`, its folders made.
fn place(dir: &Path, to: &str, from: &Path) -> PathBuf {
    let path = dir.join(to);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::copy(from, &path).unwrap();
    path
}

#[test]
fn a_folder_of_ranks_gets_one_summary_across_ranks_and_iterations() {
    let Some(real) = real_fixtures_dir() else {
        eprintln!("skipped: the real fixtures are not beside the repository");
        return;
    };
    let sources = [
        "kkaitlyn111__cs336-a2-systems__memory_small_forward.pickle",
        "kkaitlyn111__cs336-a2-systems__memory_2.7b_forward.pickle",
        "MAGMA27__assignment2-systems__memory_snapshot.pickle",
        "bcrafton__assignment2-systems__memory_snapshot.pickle",
        "notHanmin__assignment2-systems__memory_snapshot.pickle",
        "silmont2000__assignment2-systems__mem_snapshot.pickle",
    ];
    if let Some(missing) = sources.iter().find(|s| !real.join(s).is_file()) {
        eprintln!("skipped: {missing} is not among the real fixtures");
        return;
    }
    let runs = temp_dir("ranks-in");
    let placed = [
        "iteration_1/rank0.pickle",
        "iteration_1/rank1.pickle",
        "iteration_1/rank2.pickle",
        "iteration_1/rank3.pickle",
        "iteration_2/rank0.pickle",
        "iteration_2/rank1.pickle",
    ];
    // Given out of order: ranks and iterations come out in natural order.
    let mut files: Vec<PathBuf> = placed
        .iter()
        .zip(sources)
        .map(|(to, from)| place(&runs, to, &real.join(from)))
        .collect();
    files.reverse();
    let out = temp_dir("ranks-out");
    let output = report_into(&out, &[], &files);
    assert_succeeded(&output);
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains("Wrote 6 reports (HTML and Markdown) to"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&out.join("index.html").display().to_string()),
        "{stdout}"
    );

    let table = memsight(&["files", "--json"], &files);
    assert_succeeded(&table);
    let mut expected = json_lines(&table)[0]["files"].as_array().unwrap().clone();
    let key = |row: &Value| {
        (
            row["name"].as_str().unwrap().to_string(),
            row["device"].as_u64(),
        )
    };
    expected.sort_by_key(key);
    let index = read(&out.join("index.html"));
    let summary = read(&out.join("summary.md"));
    let listed: Vec<&str> = attribute_values(&index, "file");
    assert_eq!(listed.len(), expected.len(), "one row per rank");
    for (i, row) in expected.iter().enumerate() {
        let file = row["name"].as_str().unwrap();
        assert_eq!(listed[i], file, "natural order");
        let (iteration, rank) = (
            placed[i].as_bytes()[10] - b'0',
            placed[i].as_bytes()[16] - b'0',
        );
        assert_eq!(row["iteration"], u64::from(iteration));
        assert_eq!(row["rank"], u64::from(rank));
        let name = format!("iteration_{iteration}__rank{rank}");
        let line = summary
            .lines()
            .find(|l| l.contains(&format!("]({name}.md)")))
            .unwrap_or_else(|| panic!("{name} in\n{summary}"));
        assert!(
            line.starts_with(&format!(
                "| [iteration_{iteration}/rank{rank}.pickle]({name}.md) | cuda:0 | {rank} | {iteration} |"
            )),
            "{line}"
        );
        assert!(
            index.contains(&format!("<a href=\"{name}.html\">")),
            "{name}"
        );
        let page = read(&out.join(format!("{name}.html")));
        assert!(page.contains("<a href=\"index.html\">← All files</a>"));
        assert!(read(&out.join(format!("{name}.md"))).starts_with("[← All files](summary.md)\n"));
    }
    // Every row's exact numbers are the files table's.
    let peaks: Vec<u64> = index
        .split("data-column=\"peak_allocated_bytes\" data-value=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].parse().unwrap())
        .collect();
    let want: Vec<u64> = expected
        .iter()
        .map(|r| r["peak_allocated_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(peaks, want);
    assert!(
        summary.contains("- Iteration 1 (cuda:0): 4 ranks, peak allocated "),
        "{summary}"
    );
    assert!(
        summary.contains("- Iteration 2 (cuda:0): 2 ranks, peak allocated "),
        "{summary}"
    );
    assert!(index.contains("<figure class=\"chart bars\" data-chart=\"peaks\""));
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 2 * 6 + 2);
    let _ = std::fs::remove_dir_all(&runs);
    let _ = std::fs::remove_dir_all(&out);
}

/// The stderr lines `memsight overview` gives for `bad`: the page's message, offset and hint.
fn pages_message(bad: &Path) -> String {
    let output = memsight(&["overview"], &[bad.to_path_buf()]);
    assert_eq!(output.status.code(), Some(1));
    String::from_utf8(output.stderr).unwrap()
}

#[test]
fn a_bad_file_fails_with_the_pages_message_and_the_others_are_written() {
    let runs = temp_dir("bad-in");
    let example = repo().join("static/example.pickle");
    let good = place(&runs, "run/rank0.pickle", &example);
    let bad = place(
        &runs,
        "run/rank1.pickle",
        &repo().join("tests/fixtures/truncated.pickle"),
    );
    let out = temp_dir("bad-out");
    let output = report_into(&out, &[], &[bad.clone(), good]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    let message = pages_message(&bad);
    assert_eq!(stderr, message);
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.starts_with("Wrote 1 report (HTML and Markdown) to"),
        "{stdout}"
    );
    assert!(out.join("rank0.html").is_file() && out.join("rank0.md").is_file());
    assert!(!out.join("rank1.html").exists() && !out.join("rank1.md").exists());

    // The summary lists it with the same message, where and hint.
    let summary = read(&out.join("summary.md"));
    let index = read(&out.join("index.html"));
    assert!(summary.contains("1 of 2 files reported"), "{summary}");
    let lines: Vec<&str> = message.lines().collect();
    let what = lines[0]
        .split_once(": ")
        .unwrap()
        .1
        .split_once(": ")
        .unwrap()
        .1;
    let row = summary
        .lines()
        .find(|l| l.starts_with("| `rank1.pickle` |"))
        .unwrap_or_else(|| panic!("{summary}"));
    for part in [what, lines[1].trim(), lines[2].trim()] {
        assert!(index.contains(&format!(">{part}<")), "{part} in\n{index}");
        assert!(
            row.contains(part.split(['(', '\'']).next().unwrap()),
            "{part} in {row}"
        );
    }
    assert!(!index.contains("href=\"rank1.html\""));
    let _ = std::fs::remove_dir_all(&runs);
    let _ = std::fs::remove_dir_all(&out);
}

/// Every file of a folder and its bytes.
fn contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect()
}

#[test]
fn one_job_or_four_write_the_same_files() {
    let runs = temp_dir("jobs-in");
    let fixtures = repo().join("tests/fixtures");
    let mut files = vec![
        place(
            &runs,
            "step_2/rank10.pickle",
            &repo().join("static/example.pickle"),
        ),
        place(&runs, "step_2/rank2.json", &fixtures.join("small.json")),
        place(
            &runs,
            "step_2/rank3.pickle",
            &fixtures.join("two_devices.pickle"),
        ),
        place(&runs, "step_2/rank4.pickle", &fixtures.join("oom.pickle")),
        place(
            &runs,
            "step_2/rank5.pickle",
            &fixtures.join("truncated.pickle"),
        ),
        place(
            &runs,
            "step_3/rank0.json",
            &fixtures.join("kineto_memory.json"),
        ),
    ];
    if let Some(real) = real_fixtures_dir() {
        files.extend(real_files(&real).into_iter().take(8));
    }
    let one = temp_dir("jobs-1");
    let four = temp_dir("jobs-4");
    let ran_one = report_into(&one, &["--jobs", "1"], &files);
    let ran_four = report_into(&four, &["--jobs", "4"], &files);
    assert_eq!(ran_one.status.code(), Some(1), "the truncated file");
    assert_eq!(ran_one.status.code(), ran_four.status.code());
    assert_eq!(ran_one.stderr, ran_four.stderr);
    let (a, b) = (contents(&one), contents(&four));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    assert!(a.len() >= 2 * (files.len() - 1) + 2, "{:?}", a.keys());
    for (name, bytes) in &a {
        assert!(
            bytes == &b[name],
            "{name} differs between --jobs 1 and --jobs 4"
        );
    }
    // rank2 before rank10; step_2 before step_3.
    let summary = String::from_utf8(a["summary.md"].clone()).unwrap();
    let at = |s: &str| {
        summary
            .find(s)
            .unwrap_or_else(|| panic!("{s} in\n{summary}"))
    };
    assert!(at("step_2__rank2.md)") < at("step_2__rank10.md)"));
    assert!(at("step_2__rank10.md)") < at("step_3__rank0.md)"));
    let refused = report_into(&one, &["--jobs", "0"], &files);
    assert_eq!(refused.status.code(), Some(2));
    for dir in [runs, one, four] {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn a_hostile_file_name_or_call_site_is_only_ever_escaped() {
    let hostile = "<script>alert(1)</script>";
    let text = read(&repo().join("tests/fixtures/small.json"));
    let renamed = text.replace(
        r#""name":"forward""#,
        &format!(r#""name":{}"#, serde_json::to_string(hostile).unwrap()),
    );
    assert_ne!(renamed, text);
    let runs = temp_dir("hostile-in");
    let evil = runs.join("rank0 <img src=x onerror=alert(1)> & \"q\".json");
    std::fs::write(&evil, renamed).unwrap();
    let other = place(&runs, "rank1.pickle", &repo().join("static/example.pickle"));
    let out = temp_dir("hostile-out");
    let output = report_into(&out, &[], &[evil, other]);
    assert_succeeded(&output);
    let written = contents(&out);
    let names: Vec<&String> = written.keys().collect();
    assert_eq!(
        names,
        [
            "index.html",
            "rank0__img_src_x_onerror_alert_1______q_.html",
            "rank0__img_src_x_onerror_alert_1______q_.md",
            "rank1.html",
            "rank1.md",
            "summary.md"
        ]
    );
    let page = String::from_utf8(written[names[1]].clone()).unwrap();
    let index = String::from_utf8(written["index.html"].clone()).unwrap();
    for html in [&page, &index] {
        assert!(!html.to_ascii_lowercase().contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("rank0 &lt;img src=x onerror=alert(1)&gt; &amp; &quot;q&quot;.json"));
    }
    assert!(
        page.contains(&format!(
            ":{}</code>",
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        )),
        "{page}"
    );
    let markdown = String::from_utf8(written[names[2]].clone()).unwrap();
    assert!(markdown.contains("rank0 \\<img src=x onerror=alert(1)\\> \\& \"q\".json, cuda:0"));
    let summary = String::from_utf8(written["summary.md"].clone()).unwrap();
    assert!(summary.contains("[rank0 \\<img src=x onerror=alert(1)\\> \\& \"q\".json](rank0__img_src_x_onerror_alert_1______q_.md)"), "{summary}");
    let _ = std::fs::remove_dir_all(&runs);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn one_file_gets_its_page_and_markdown_and_no_summary() {
    let example = repo().join("static/example.pickle");
    let out = temp_dir("one-out").join("made/on/the/way");
    let output = report_into(&out, &["--device", "0"], std::slice::from_ref(&example));
    assert_succeeded(&output);
    let written = contents(&out);
    assert_eq!(
        written.keys().collect::<Vec<_>>(),
        ["example.html", "example.md"]
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains(&out.join("example.html").display().to_string()),
        "{stdout}"
    );
    // The Markdown is the report `--output x.md` writes, with the overview before the rules.
    let markdown = String::from_utf8(written["example.md"].clone()).unwrap();
    let plain = memsight(&["report", "--device", "0"], std::slice::from_ref(&example));
    let plain = String::from_utf8(plain.stdout).unwrap();
    let (before_rules, rules) = plain.split_once("## Rules\n").unwrap();
    assert!(markdown.starts_with(before_rules), "{markdown}");
    assert!(markdown.contains("\n## Overview\n\n### At the peak\n\n| Metric | Value | Exact |\n"));
    assert!(markdown.contains(&format!("## Rules\n{rules}")));
    assert!(
        markdown.ends_with(&format!(
            "\n---\n\nMade by memsight {} from a file of 560 KiB (573,782 bytes).\n",
            env!("CARGO_PKG_VERSION")
        )),
        "{markdown}"
    );
    let html = String::from_utf8(written["example.html"].clone()).unwrap();
    assert!(html.contains("<title>Memory report: "));
    assert!(!html.contains("All files"));
    // A file in the way of the folder is refused, saying how to write one Markdown file.
    let in_the_way = out.join("example.html");
    let refused = report_into(&in_the_way, &[], std::slice::from_ref(&example));
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("name it *.md"));
    let _ = std::fs::remove_dir_all(out.parent().unwrap().parent().unwrap().parent().unwrap());
}
