fn main() {
    for path in std::env::args().skip(1) {
        let bytes = std::fs::read(&path).unwrap();
        let t = std::time::Instant::now();
        match memsight::decode::decode_bytes(&bytes) {
            Ok(s) => {
                let dt = t.elapsed();
                for d in &s.devices {
                    let alloc: u64 = d.blocks.iter().filter(|b| b.state.is_allocated()).map(|b| b.size).sum();
                    let reserved: u64 = d.segments.iter().map(|s| s.total_size).sum();
                    println!("{} dev{} rows={} segs={} blocks={} reserved={} alloc={} frames={} stacks={} {:?}", path.rsplit('/').next().unwrap(), d.id, d.trace.len(), d.segments.len(), d.blocks.len(), reserved, alloc, s.frames.len(), s.stacks.len(), dt);
                }
            }
            Err(e) => println!("{path}: ERROR {e}"),
        }
    }
}
