//! `event-sink report` over the fixture dataset renders in headless Chromium (Debian's
//! `chromium`, installed by `deploy/local/install.sh`) with every chart.
//!
//! The page and its screenshot stay in `target/tmp/analysis-report/` for a look.

use std::path::Path;
use std::process::Command;

use event_sink::analysis::{generate_report, ReportOptions};

use super::seeded_clickhouse;

/// Chromium flags for a sandbox-less, network-less, one-shot run.
fn chromium(profile: &Path) -> Command {
    let mut command = Command::new("chromium");
    command.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        "--hide-scrollbars",
    ]);
    command.arg(format!("--user-data-dir={}", profile.display()));
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_renders_with_its_charts_in_headless_chromium() {
    let (_server, client) = seeded_clickhouse().await;
    let page = generate_report(&client, &ReportOptions::default())
        .await
        .expect("report");
    assert!(
        !page.contains("src=\"http") && !page.contains("<link"),
        "offline page"
    );

    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("analysis-report");
    std::fs::create_dir_all(&out).expect("output dir");
    let html = out.join("report.html");
    let png = out.join("report.png");
    std::fs::write(&html, &page).expect("write report");
    let _ = std::fs::remove_file(&png);
    let profile = tempfile::tempdir().expect("profile dir");
    let url = format!("file://{}", html.display());

    let dom = chromium(profile.path())
        .args(["--dump-dom", &url])
        .output()
        .unwrap_or_else(|e| panic!("cannot run chromium ({e}); run deploy/local/install.sh"));
    assert!(
        dom.status.success(),
        "chromium --dump-dom failed: {}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    for id in [
        "chart-pareto-all",
        "chart-exit-status-all",
        "chart-token-mix-all",
        "chart-latency-all",
    ] {
        let start = dom
            .find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("{id} not in the DOM"));
        assert!(
            dom[..start].ends_with("<svg xmlns=\"http://www.w3.org/2000/svg\" "),
            "{id} is an <svg>"
        );
    }
    assert!(dom.contains("class=\"frontier\""), "frontier drawn");
    assert!(dom.contains("<circle"), "policy points drawn");
    assert!(dom.contains("id=\"table-lost_events\""));
    assert!(dom.contains("id=\"window\""), "time-range filter");
    assert!(dom.contains("class=\"policy\""), "policy filter");

    let shot = chromium(profile.path())
        .arg(format!("--screenshot={}", png.display()))
        .args(["--window-size=1400,2000", &url])
        .output()
        .expect("chromium --screenshot");
    assert!(
        shot.status.success(),
        "chromium --screenshot failed: {}",
        String::from_utf8_lossy(&shot.stderr)
    );
    let image = std::fs::read(&png).expect("screenshot written");
    assert!(image.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    // A blank 1400x2000 page compresses to a few KB; charts and tables make it far larger.
    assert!(
        image.len() > 50_000,
        "screenshot looks empty: {} bytes",
        image.len()
    );
}
