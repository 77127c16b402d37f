//! The `event-sink` binary's logs written to a file (a service's log, `2> sink.log`)
//! carry no colour codes: colour is for terminals only.

use std::process::Command;

const SINK: &str = env!("CARGO_BIN_EXE_event-sink");

#[test]
fn logs_written_to_a_file_have_no_colour_codes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sink.log");
    let log = std::fs::File::create(&path).expect("log file");
    // Invalid settings: the error, then exit 2, without any server.
    let status = Command::new(SINK)
        .args(["--batch-max-rows", "0", "--metrics-listen", "off"])
        .env_remove("NO_COLOR")
        .stderr(log)
        .status()
        .expect("run event-sink");
    assert_eq!(status.code(), Some(2));
    let text = std::fs::read(&path).expect("log");
    assert!(
        String::from_utf8_lossy(&text)
            .contains("error: invalid settings: invalid setting batch.max_rows"),
        "{}",
        String::from_utf8_lossy(&text)
    );
    assert!(!text.contains(&0x1b), "colour codes in a log file");
}
