//! Decodes snapshot files and prints what they hold: `cargo run --release -p memsight-core --example smoke -- FILE...`.
fn main() {
    for path in std::env::args().skip(1) {
        let t = std::time::Instant::now();
        let file = std::fs::File::open(&path).unwrap();
        match memsight_core::decode::decode_reader(file, &mut |_| {}) {
            Ok(s) => {
                let decoded = t.elapsed();
                let a = memsight_core::analysis::Analysed::new(s);
                let analysed = t.elapsed() - decoded;
                let rows: usize = a.snapshot.devices.iter().map(|d| d.trace.len()).sum();
                println!(
                    "{}: {} rows, decode {:?}, analyse {:?}, model {} B/row, facts {} B/row",
                    path.rsplit('/').next().unwrap(),
                    rows,
                    decoded,
                    analysed,
                    (a.snapshot.heap_bytes() - a.snapshot.strings.heap_bytes()) / rows.max(1),
                    a.facts_heap_bytes() / rows.max(1)
                );
            }
            Err(e) => println!("{path}: ERROR {e}"),
        }
    }
}
