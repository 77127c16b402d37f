//! Decode throughput: native events through `decode` and `decode_message` (which must be
//! as fast: the Smith reading is only tried after the fast path refused the bytes), and
//! Smith events through `decode_message`.
//!
//! `cargo run --release -p bench-schemas --example decode_bench [rounds]`

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use bench_schemas::EventType;

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let native: Vec<Vec<u8>> = EventType::ALL
        .iter()
        .map(|t| read(&dir.join(format!("{}.json", t.as_str()))))
        .collect();
    let smith: Vec<Vec<u8>> = read(&dir.join("smith/smith-events.jsonl"))
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect();

    let decode = per_second(&native, rounds, |b| bench_schemas::decode(b).is_ok());
    let message = per_second(&native, rounds, |b| {
        bench_schemas::decode_message(b, Some("0190a6a8-0000-7000-8000-000000000000")).is_ok()
    });
    let smith_rate = per_second(&smith, rounds / 6, |b| {
        bench_schemas::decode_message(b, Some("smith-1")).is_ok()
    });
    println!("native via decode:          {decode:>10.0} events/s");
    println!("native via decode_message:  {message:>10.0} events/s");
    println!("ratio decode_message/decode: {:.3}", message / decode);
    println!("smith via decode_message:   {smith_rate:>10.0} events/s");
}

fn read(path: &std::path::Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Decodes every event `rounds` times; events per second. Panics if one is refused.
fn per_second(events: &[Vec<u8>], rounds: usize, decode: impl Fn(&[u8]) -> bool) -> f64 {
    let start = Instant::now();
    for _ in 0..rounds {
        for event in events {
            assert!(decode(black_box(event)), "refused");
        }
    }
    (rounds * events.len()) as f64 / start.elapsed().as_secs_f64()
}
