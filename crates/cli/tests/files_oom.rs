//! The out-of-memory column of `memsight files` (text, CSV and JSON) and of digests: on the
//! real four-GPU run whose cuda:1 ran out of memory, that device's row counts one and the
//! others none; a PyTorch 2.0-era file says it could not record one, never none.

mod command;
#[path = "../../core/tests/common/mod.rs"]
mod common;

use command::{json_lines, memsight, printed};
use common::{real_fixture, repo};

const FOUR_GPUS_OOM: &str = "Constructor-Sun__code_location__memory_snapshot.pickle";

#[test]
fn files_and_digests_count_each_devices_out_of_memory_errors() {
    let legacy = repo().join("tests/fixtures/legacy_2_0.pickle");
    let Some(oom) = real_fixture(FOUR_GPUS_OOM) else {
        return;
    };
    let files = [oom, legacy];

    let json = &json_lines(&memsight(&["files", "--json"], &files))[0];
    let by_device: Vec<(u64, Option<u64>, String)> = json["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["device"].as_u64().unwrap(),
                row["oom"]["count"].as_u64(),
                row["oom"]["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        by_device,
        [
            (0, None, "none_recorded".to_string()),
            (1, Some(1), "recorded".to_string()),
            (2, None, "none_recorded".to_string()),
            (0, None, "cannot_record".to_string()),
        ]
    );
    assert_eq!(json["files"][1]["oom"]["first"]["event"], 421);

    let csv = printed(&["files", "--csv"], &files);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = header.iter().position(|&h| h == "oom_count").unwrap();
    let counts: Vec<String> = lines
        .map(|l| {
            l.rsplit(',')
                .nth(header.len() - 1 - at)
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(counts, ["0", "1", "0", ""], "{csv}");

    let markdown = printed(&["files"], &files);
    let title: Vec<&str> = markdown.lines().next().unwrap().split(" | ").collect();
    let at = title.iter().position(|&t| t == "Out of memory").unwrap();
    let cells: Vec<String> = markdown
        .lines()
        .skip(2)
        .map(|l| l.split(" | ").nth(at).unwrap().to_string())
        .collect();
    assert_eq!(
        cells,
        ["none", "1 (event 421)", "none", "not recorded"],
        "{markdown}"
    );

    let digests = json_lines(&memsight(&["digest"], &files));
    let oom = &digests[0]["devices"][1]["oom"];
    assert_eq!(
        (oom["kind"].as_str(), oom["count"].as_u64()),
        (Some("recorded"), Some(1))
    );
    assert_eq!(digests[0]["devices"][1]["device"], 1);
    assert_eq!(digests[1]["devices"][0]["oom"]["why"], "format2_0");
}
