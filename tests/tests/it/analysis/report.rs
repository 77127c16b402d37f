//! `bench-analysis report` over the fixture datasets renders in headless Chromium (Debian's
//! `chromium`, installed by `deploy/local/install.sh`) with every chart; over the sweep
//! of 17 policies it shows the per-instance table with the stored values, lists the
//! policies the cost chart cannot place, puts costs on a log axis and splits latency by
//! policy.
//!
//! The pages and their screenshots stay in `target/tmp/analysis-report/` for a look.

use std::path::Path;
use std::process::Command;

use bench_analysis::{generate_report, ReportOptions};

use super::{seeded_clickhouse, seeded_clickhouse_from, sweep_dir};

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
    let (server, client) = seeded_clickhouse().await;
    // A decision stored by an experiment run until decided (2026-11-21 21:10:00 UTC).
    server.query(
        "INSERT INTO benchstream.experiment_decisions (event_id, run_id, task_id, ts, ts_ms, \
         policy_id, cfg_hash, env_hash, received_at, experiment, baseline, candidate, decision, \
         cs_low, cs_high, rounds, alpha) VALUES \
         (toUUID('0193a5c2-7e24-7000-8000-00000000000c'), \
         toUUID('0193a5c2-7e30-7000-8000-00000000000d'), 'experiment:ab', \
         toDateTime(1795295400), 1795295400000, 'decision', '', '', toDateTime(1795295400), \
         'ab', 'model-a:raw', 'model-b:raw', 'baseline_better', -0.4, -0.02, 6, 0.05)",
    );
    let page = generate_report(&client, &ReportOptions::default())
        .await
        .expect("report");
    let decisions = element(&page, "id=\"table-experiment_decisions\"", "</table>");
    for shown in [
        "model-a:raw",
        "baseline_better",
        "-0.0200",
        ">6<",
        "2026-11-21 21:10:00 UTC",
    ] {
        assert!(decisions.contains(shown), "{shown} in {decisions}");
    }
    assert!(
        !page.contains("src=\"http") && !page.contains("<link"),
        "offline page"
    );

    let dom = render_in_chromium(&page, "report");
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

    // With one policy ticked, the per-instance table keeps only the tasks it ran (each
    // task of this dataset is one policy's).
    let kept = "openai/gpt-4o-mini:observation_masking";
    let untick = format!(
        "<script>document.querySelectorAll('input.policy').forEach(function (b) {{\
         if (b.value !== '{kept}') {{ b.checked = false; \
         b.dispatchEvent(new Event('change')); }} }});</script></body>"
    );
    let dom = render_in_chromium(&page.replace("</body>", &untick), "report-one-policy");
    let instances = element(&dom, "id=\"table-instances-all\"", "</tbody>");
    let shown: Vec<&str> = instances
        .split("<tr")
        .skip(2)
        .filter(|row| {
            !row.split('>')
                .next()
                .unwrap_or_default()
                .contains("display: none")
        })
        .filter_map(|row| row.split("<th>").nth(1)?.split('<').next())
        .collect();
    assert_eq!(shown, ["task-a1", "task-a2", "task-a3", "task-a4"]);
}

/// Writes `page` to `target/tmp/analysis-report/<name>.html`, checks Chromium renders it
/// (a screenshot of 1400 x 3000 px beside it, far from blank) and returns its DOM after
/// the page's script ran.
fn render_in_chromium(page: &str, name: &str) -> String {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("analysis-report");
    std::fs::create_dir_all(&out).expect("output dir");
    let html = out.join(format!("{name}.html"));
    let png = out.join(format!("{name}.png"));
    std::fs::write(&html, page).expect("write report");
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
    let shot = chromium(profile.path())
        .arg(format!("--screenshot={}", png.display()))
        .args(["--window-size=1400,3000", &url])
        .output()
        .expect("chromium --screenshot");
    assert!(
        shot.status.success(),
        "chromium --screenshot failed: {}",
        String::from_utf8_lossy(&shot.stderr)
    );
    let image = std::fs::read(&png).expect("screenshot written");
    assert!(image.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    // A blank page compresses to a few KB; charts and tables make it far larger.
    assert!(
        image.len() > 50_000,
        "screenshot looks empty: {} bytes",
        image.len()
    );
    String::from_utf8_lossy(&dom.stdout).into_owned()
}

/// The text of the element that starts at the first `marker` of `html`, up to `end`.
fn element<'a>(html: &'a str, marker: &str, end: &str) -> &'a str {
    let start = html
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} not in the page"));
    let len = html[start..].find(end).expect("element end");
    &html[start..start + len]
}

const GPT4O_RAW: &str = "openai/gpt-4o-2024-08-06:raw";
const UNPRICED: &str = "local/qwen2.5-coder-32b-instruct:raw";
const NEVER_FINISHED: &str = "meta-llama/llama-3.3-70b-instruct:observation_masking(m=8)";
const TASK: &str = "django__django-11099";

/// (solved, finished, average cost, average turns) of `policy` on `task`, from the
/// sweep's run_stops.jsonl (each run stopped once there, so no dedup is needed).
fn stored_result(policy: &str, task: &str) -> (u64, u64, f64, f64) {
    let text = std::fs::read_to_string(sweep_dir().join("run_stops.jsonl")).expect("fixture");
    let stops: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .filter(|v: &serde_json::Value| v["policy_id"] == policy && v["task_id"] == task)
        .collect();
    let n = stops.len() as f64;
    let sum = |key: &str| {
        stops
            .iter()
            .map(|v| v[key].as_f64().unwrap_or(0.0))
            .sum::<f64>()
    };
    (
        sum("success") as u64,
        stops.len() as u64,
        sum("cost_usd") / n,
        sum("turns") / n,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweep_report_shows_instances_unplaced_policies_log_costs_and_latency_per_policy() {
    let (_server, client) = seeded_clickhouse_from(&sweep_dir()).await;
    let page = generate_report(&client, &ReportOptions::default())
        .await
        .expect("report");
    let dom = render_in_chromium(&page, "sweep");

    // Per instance: the stored verdicts, cost and turns of a policy run with two seeds.
    let (solved, finished, cost, turns) = stored_result(GPT4O_RAW, TASK);
    assert_eq!(finished, 2);
    let cell = element(
        &page,
        // Every run of the sweep was judged: judged = finished.
        &format!("title=\"{GPT4O_RAW} on {TASK}: {solved} of {finished} judged runs solved ({finished} finished, 2 started)\""),
        "</td>",
    );
    let mark = match solved {
        0 => "\u{2717}".to_owned(),
        2 => "\u{2713}".to_owned(),
        n => format!("{n}/2"),
    };
    assert!(cell.contains(&format!("<b>{mark}</b>")), "{cell}");
    let shown_cost: f64 = cell
        .split("<small>$")
        .nth(1)
        .and_then(|c| c.split(' ').next())
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no cost in {cell}"));
    assert!((shown_cost - cost).abs() < 1e-6, "{shown_cost} vs {cost}");
    assert!(cell.contains(&format!("{turns} turns")), "{cell}");
    let unpriced = element(&page, &format!("title=\"{UNPRICED} on {TASK}:"), "</td>");
    assert!(unpriced.contains("cost unknown"), "{unpriced}");
    let running = element(
        &page,
        &format!("title=\"{NEVER_FINISHED} on {TASK}:"),
        "</td>",
    );
    assert!(running.contains("running"), "{running}");
    let free = element(
        &page,
        &format!("title=\"scripted:empty-submit on {TASK}:"),
        "</td>",
    );
    assert!(
        free.contains("<b>\u{2717}</b>") && free.contains("$0 "),
        "{free}"
    );

    // What the cost chart cannot place is listed, with the reason.
    let unplaced = element(&dom, "id=\"chart-pareto-all-unplaced\"", "</ul>");
    let line = element(
        unplaced,
        &format!("<li data-policy=\"{UNPRICED}\""),
        "</li>",
    );
    assert!(line.contains("cost unknown"), "{line}");
    let line = element(
        unplaced,
        &format!("<li data-policy=\"{NEVER_FINISHED}\""),
        "</li>",
    );
    assert!(line.contains("no finished run"), "{line}");

    // Costs from $0.0004 to $0.03 sit on a log axis, with a lane for the free policy.
    let pareto = element(&dom, "id=\"chart-pareto-all\"", "</svg>");
    for tick in [
        ">$0.001</text>",
        ">$0.01</text>",
        ">$0.1</text>",
        ">$0</text>",
    ] {
        assert!(pareto.contains(tick), "no tick {tick}");
    }
    assert_eq!(pareto.matches("class=\"tick log-tick major\"").count(), 4);

    // Latency: one row per policy with calls, each hidden by the policy filter.
    let latency = element(&dom, "id=\"chart-latency-all\"", "</svg>");
    assert_eq!(
        latency
            .matches("<g class=\"latency-row\" data-policy=")
            .count(),
        16
    );
    assert!(latency.contains(&format!("data-policy=\"{UNPRICED}\"")));
    assert!(
        !latency.contains("data-policy=\"scripted:empty-submit\""),
        "no calls"
    );
    assert!(latency.contains("has-timeouts"), "timeouts marked");

    // Unticking every other policy in the page hides their latency rows (the page's own
    // script, run by Chromium, after a script that clears the boxes).
    let untick = format!(
        "<script>document.querySelectorAll('input.policy').forEach(function (b) {{\
         if (b.value !== '{GPT4O_RAW}') {{ b.checked = false; \
         b.dispatchEvent(new Event('change')); }} }});</script></body>"
    );
    let dom = render_in_chromium(&page.replace("</body>", &untick), "sweep-one-policy");
    let latency = element(&dom, "id=\"chart-latency-all\"", "</svg>");
    let rows: Vec<&str> = latency
        .split("<g class=\"latency-row\" ")
        .skip(1)
        .map(|row| row.split('>').next().unwrap_or_default())
        .collect();
    assert_eq!(rows.len(), 16);
    for row in rows {
        let shown = !row.contains("display: none");
        assert_eq!(
            shown,
            row.contains(&format!("data-policy=\"{GPT4O_RAW}\"")),
            "{row}"
        );
    }
    // Every policy's column of the per-instance table fits the page: none is cut off.
    let measure = "<script>var t = document.getElementById('table-instances-all'); \
         document.body.setAttribute('data-instances-fit', \
         String(t.scrollWidth <= t.parentNode.clientWidth));</script></body>";
    let dom = render_in_chromium(&page.replace("</body>", measure), "sweep-instances");
    assert!(
        dom.contains("data-instances-fit=\"true\""),
        "the per-instance table is wider than the page"
    );

    // --policy narrows every chart, latency included.
    let one = generate_report(
        &client,
        &ReportOptions {
            policy: Some(GPT4O_RAW.into()),
            ..ReportOptions::default()
        },
    )
    .await
    .expect("report of one policy");
    let latency = element(&one, "id=\"chart-latency-all\"", "</svg>");
    assert_eq!(latency.matches("class=\"latency-row\"").count(), 1);
    assert!(latency.contains(&format!("data-policy=\"{GPT4O_RAW}\"")));
}
