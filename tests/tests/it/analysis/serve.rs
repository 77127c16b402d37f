//! `bench-analysis serve` in headless Chromium, driven over WebDriver (Debian's
//! `chromium-driver`, installed by `deploy/local/install.sh`, through fantoccini), against
//! a viewer over real NATS and ClickHouse (the sink in between). One set-up serves every
//! check of the browser test: the pages' text, hostile strings staying text, a run's
//! tool output and final diff, the side-by-side view's divergence, and a run started
//! after the page opened appearing and finishing on it without a reload.
//!
//! Screenshots of a run page and an experiment page stay in `target/tmp/analysis-serve/`
//! (the ones in event-sink/analysis/docs/ were taken there).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bench_analysis::command::{Cli, Command as Sub};
use bench_analysis::serve::ServeConfig;
use bench_schemas::{BenchmarkEvent, EventType, Payload, StepType, TestSet};
use benchstream_tests::cli::{run_to_exit, workspace_binary};
use benchstream_tests::events::{fixture, publish, Run};
use benchstream_tests::free_port;
use benchstream_tests::harness::http::{request_with_headers, Response};
use clap::Parser;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::common::{jetstream, start_pipeline};

const EXPERIMENT: &str = "exp-view";
const TASK: &str = "task-diverge";
/// The output of a tool call of run a, shown on its page.
const KNOWN_OUTPUT: &str = "KNOWN-OUTPUT-7f3a: README.md src/";
/// What an agent may write: markup that would run if it were not escaped.
const HOSTILE: &str =
    "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">";
/// The final diff of run a.
const DIFF: &str = "--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1 @@\n-broken line\n+fixed line\n";
const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// A run's events as a runner publishes them.
struct RunEvents {
    run: Run,
    task: String,
    policy: String,
}

impl RunEvents {
    fn new(task: &str, policy: &str) -> RunEvents {
        RunEvents {
            run: Run::default(),
            task: task.to_owned(),
            policy: policy.to_owned(),
        }
    }

    fn id(&self) -> String {
        self.run.run_id.to_string()
    }

    fn stamp(&mut self, event: BenchmarkEvent) -> BenchmarkEvent {
        let mut event = self.run.stamp(event);
        event.task_id = self.task.clone();
        event.policy_id = self.policy.clone();
        event
    }

    fn start(&mut self) -> BenchmarkEvent {
        let mut start = fixture(EventType::RunStart);
        if let Payload::RunStart(data) = &mut start.payload {
            data.experiment.name = Some(EXPERIMENT.to_owned());
            data.experiment.planned_runs = Some(3);
        }
        self.stamp(start)
    }

    fn step(&mut self, kind: StepType, content: &str) -> BenchmarkEvent {
        let mut step = fixture(EventType::Step);
        if let Payload::Step(data) = &mut step.payload {
            data.step_type = kind;
            data.content = content.to_owned();
        }
        self.stamp(step)
    }

    /// A tool call: its `act` step, the `tool_call` and the `observe` step with `output`.
    fn tool(&mut self, args: &str, output: &str) -> Vec<BenchmarkEvent> {
        let call = fixture(EventType::ToolCall);
        vec![
            self.step(StepType::Act, args),
            self.stamp(call),
            self.step(StepType::Observe, output),
        ]
    }

    fn test(&mut self, id: &str, before: bool, after: bool) -> BenchmarkEvent {
        let mut test = fixture(EventType::TestOutcome);
        if let Payload::TestOutcome(data) = &mut test.payload {
            data.test_id = id.to_owned();
            data.test_set = TestSet::FailToPass;
            data.before = Some(before);
            data.after = after;
        }
        self.stamp(test)
    }

    fn stop(&mut self, solved: bool, diff: Option<&str>) -> BenchmarkEvent {
        let mut stop = fixture(EventType::RunStop);
        if let Payload::RunStop(data) = &mut stop.payload {
            data.success = Some(solved);
            data.diff_sha256 = diff.map(|d| bench_schemas::sha256_hex(d.as_bytes()));
            data.final_diff = diff.map(str::to_owned);
        }
        self.stamp(stop)
    }
}

/// Run a: solved, with the known tool output, a hostile step, two test outcomes (the
/// flipped one listed second) and a final diff, sent with its `run_stop` (the viewer reads
/// it from ClickHouse: it is given no runs directory). Run b: the same first three steps, then
/// another command (step 4 diverges). And the start of a run outside any experiment.
fn two_runs() -> (RunEvents, RunEvents, Vec<BenchmarkEvent>) {
    let mut a = RunEvents::new(TASK, "bench/model-a:raw");
    let mut b = RunEvents::new(TASK, "bench/model-b:raw");
    let mut events = Vec::new();
    for (run, second) in [
        (&mut a, "bash: cat src/x.py"),
        (&mut b, "bash: cat src/y.py"),
    ] {
        events.push(run.start());
        events.push(run.step(StepType::Reason, "look around first"));
        events.extend(run.tool("bash: ls", KNOWN_OUTPUT));
        events.extend(run.tool(second, "the file"));
    }
    events.push(a.step(StepType::Reason, HOSTILE));
    events.push(a.test("tests/test_x.py::test_kept", true, true));
    events.push(a.test("tests/test_x.py::test_flipped", false, true));
    events.push(a.stop(true, Some(DIFF)));
    events.push(b.stop(false, None));
    // A run outside any experiment: no experiment of its own on the home page.
    let mut outside = RunEvents::new("task-outside", "bench/model-a:raw");
    let mut start = outside.start();
    if let Payload::RunStart(data) = &mut start.payload {
        data.experiment.name = None;
    }
    events.push(start);
    events.push(decision());
    (a, b, events)
}

/// The decision of the experiment, as `run --until-decided` publishes it: model-b
/// better, after 4 rounds.
fn decision() -> BenchmarkEvent {
    let mut event = fixture(EventType::ExperimentDecision);
    event.run_id = uuid::Uuid::now_v7();
    event.event_id = uuid::Uuid::now_v7();
    event.task_id = format!("experiment:{EXPERIMENT}");
    if let Payload::ExperimentDecision(data) = &mut event.payload {
        data.experiment = EXPERIMENT.to_owned();
        data.baseline = "bench/model-a:raw".to_owned();
        data.candidate = "bench/model-b:raw".to_owned();
        data.rounds = 4;
    }
    event
}

/// The viewer on a free loopback port with `flags`; its port and stop token.
async fn start_viewer(flags: &[&str]) -> (u16, CancellationToken) {
    let mut argv = vec!["bench-analysis", "serve"];
    argv.extend_from_slice(flags);
    let Sub::Serve(args) = Cli::try_parse_from(argv).expect("flags parse").command else {
        panic!("not serve");
    };
    let config: ServeConfig = args.into_config().expect("valid settings");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    let stop = CancellationToken::new();
    let token = stop.clone();
    tokio::spawn(async move {
        bench_analysis::serve::serve(listener, config, token)
            .await
            .expect("serves");
    });
    (port, stop)
}

/// GET `target` (blocking, on another thread).
async fn get(port: u16, target: &str, headers: &[(&str, &str)]) -> Response {
    let path = target.to_owned();
    let headers: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    tokio::task::spawn_blocking(move || {
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        request_with_headers(port, "GET", &path, &headers, b"", HTTP_TIMEOUT)
    })
    .await
    .expect("request thread")
    .unwrap_or_else(|e| panic!("GET {target}: {e}"))
}

fn header<'r>(response: &'r Response, name: &str) -> Option<&'r str> {
    response
        .headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

fn body_json(response: &Response) -> Value {
    serde_json::from_slice(&response.body).expect("a JSON body")
}

/// chromedriver on a free port, killed on drop.
struct Driver {
    child: Child,
    port: u16,
    _profile: tempfile::TempDir,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Headless Chromium under chromedriver, and a WebDriver session of it.
async fn browser() -> (Driver, Client) {
    let port = free_port();
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run chromedriver ({e}); run deploy/local/install.sh"));
    let driver = Driver {
        child,
        port,
        _profile: tempfile::tempdir().expect("profile dir"),
    };
    let capabilities = serde_json::json!({
        "goog:chromeOptions": {
            "binary": "/usr/bin/chromium",
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--no-first-run", "--disable-background-networking", "--window-size=1400,2200",
                     format!("--user-data-dir={}", driver._profile.path().display())],
        }
    });
    let capabilities = capabilities.as_object().expect("an object").clone();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let connecting =
            ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                .capabilities(capabilities.clone())
                .connect(&format!("http://127.0.0.1:{}", driver.port))
                .await;
        match connecting {
            Ok(client) => return (driver, client),
            Err(e) if Instant::now() > deadline => panic!("no WebDriver session: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// The text of the first element `css` finds, once `done` holds for it (within 20 s).
async fn wait_text(client: &Client, css: &str, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut last = String::new();
    while Instant::now() < deadline {
        if let Ok(element) = client.find(Locator::Css(css)).await {
            last = element.text().await.unwrap_or_default();
            if done(&last) {
                return last;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let page = client.source().await.unwrap_or_default();
    panic!("{css}: still {last:?} after 20 s; the page:\n{page}");
}

/// Writes a screenshot of the page `client` shows to `target/tmp/analysis-serve/<name>.png`.
async fn screenshot(client: &Client, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("analysis-serve");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    let png = client.screenshot().await.expect("screenshot");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    let path = dir.join(format!("{name}.png"));
    std::fs::write(&path, png).expect("write screenshot");
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_viewer_shows_runs_as_text_compares_them_by_step_and_updates_live_in_chromium() {
    let (nats, sink) = start_pipeline().await;
    let js = jetstream(&nats.url()).await;
    let (a, b, events) = two_runs();
    for event in &events {
        publish(&js, event).await;
    }
    sink.wait_for(
        "SELECT count() FROM benchstream.events_raw FINAL",
        &events.len().to_string(),
    )
    .await;
    let clickhouse_url = sink.clickhouse.http_url();
    let (port, stop) = start_viewer(&[
        "--clickhouse-url",
        &clickhouse_url,
        "--nats-url",
        &nats.url(),
    ])
    .await;
    check_api(port, &a.id()).await;

    let (_driver, client) = browser().await;
    let base = format!("http://127.0.0.1:{port}");
    check_run_page(&client, &base, &a.id()).await;
    check_side_by_side(&client, &base, &a.id(), &b.id()).await;
    check_live_run(&client, &base, port, &js).await;
    check_comparison_sees_the_new_run(port).await;
    check_live_run_page(&client, &base, &js, &sink).await;
    client.close().await.expect("close the browser");
    stop.cancel();
    sink.stop().await;
}

/// The JSON API: the run object, the experiments' progress, errors as JSON with a 4xx;
/// every answer with the Content-Security-Policy.
async fn check_api(port: u16, run_a: &str) {
    let run = get(port, &format!("/api/runs/{run_a}"), &[]).await;
    assert_eq!(run.status, 200);
    let csp = header(&run, "content-security-policy").expect("a CSP");
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
        "{csp}"
    );
    let run = body_json(&run);
    for key in [
        "run_id",
        "run_start",
        "events",
        "run_stop",
        "diff",
        "test_outcomes",
        "integrity",
    ] {
        assert!(run.get(key).is_some(), "/api/runs has no {key}");
    }
    let seqs: Vec<u64> = run["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["seq"].as_u64())
        .collect();
    assert_eq!(
        seqs,
        (0..seqs.len() as u64).collect::<Vec<_>>(),
        "every event, in seq order"
    );
    assert_eq!(
        run["test_outcomes"][0]["data"]["test_id"], "tests/test_x.py::test_flipped",
        "flipped first"
    );
    assert_eq!(run["diff"]["text"], DIFF);

    let experiments = body_json(&get(port, "/api/experiments", &[]).await);
    assert_eq!(
        experiments.as_array().map(Vec::len),
        Some(1),
        "{experiments}"
    );
    let ours = &experiments[0];
    assert_eq!(ours["experiment"], EXPERIMENT);
    assert_eq!(
        (ours["done"].as_u64(), ours["planned_runs"].as_u64()),
        (Some(2), Some(3))
    );
    assert_eq!(
        (ours["judged"].as_u64(), ours["solved"].as_u64()),
        (Some(2), Some(1))
    );

    // The experiment's stored decision, in its page's JSON twin and in its page.
    let page = body_json(&get(port, &format!("/api/experiments/{EXPERIMENT}"), &[]).await);
    let decided = &page["decisions"][0];
    assert_eq!(
        (
            decided["decision"].as_str(),
            decided["rounds"].as_u64(),
            decided["baseline"].as_str(),
            decided["candidate"].as_str()
        ),
        (
            Some("candidate_better"),
            Some(4),
            Some("bench/model-a:raw"),
            Some("bench/model-b:raw")
        ),
        "{page}"
    );
    let html = get(port, &format!("/experiments/{EXPERIMENT}"), &[]).await;
    let html = String::from_utf8_lossy(&html.body);
    // How its sequence bet: the fixture's bets were tuned to 0.2.
    assert_eq!(decided["detect"].as_f64(), Some(0.2), "{page}");
    assert!(
        html.contains("candidate_better")
            && html.contains("tuned to 0.2")
            && html.contains("2026-11-21 21:10:00 UTC"),
        "the decision, its bets and when it was made: {html}"
    );

    // compare's answer over the experiment, each policy against the baseline.
    let compared = body_json(&get(port, COMPARE, &[]).await);
    assert_eq!(compared["policies"].as_array().map(Vec::len), Some(2));
    assert_eq!(compared["comparisons"][0]["candidate"], "bench/model-b:raw");
    assert_eq!(counted_runs(&compared, "bench/model-a:raw"), Some(1));
    let unknown = get(port, "/compare?baseline=nobody", &[]).await;
    assert_eq!(unknown.status, 400);
    assert!(String::from_utf8_lossy(&unknown.body).contains("no runs of &quot;nobody&quot;"));

    let bad = get(port, "/api/runs/not-a-run", &[]).await;
    assert_eq!(bad.status, 400);
    assert!(body_json(&bad)["error"]
        .as_str()
        .is_some_and(|e| e.contains("not-a-run")));
    let unknown = get(port, &format!("/api/runs/{}", uuid::Uuid::now_v7()), &[]).await;
    assert_eq!(unknown.status, 404);
}

/// The comparison of the experiment's policies, model-a the baseline.
const COMPARE: &str = "/api/compare?experiment=exp-view&baseline=bench%2Fmodel-a%3Araw";

/// The runs of `policy` that count in `compare`'s answer.
fn counted_runs(compared: &Value, policy: &str) -> Option<u64> {
    compared["policies"]
        .as_array()?
        .iter()
        .find(|p| p["policy_id"] == policy)?["runs"]
        .as_u64()
}

/// The comparison the viewer kept for the experiment (asked for in `check_api`) is not
/// given again as fresh once a run of it has finished since (`check_live_run`'s): it is
/// computed again, and the fresh answer counts the run.
async fn check_comparison_sees_the_new_run(port: u16) {
    let compared = until_fresh(port, COMPARE, 3).await;
    assert_eq!(
        counted_runs(&compared, "bench/model-a:raw"),
        Some(2),
        "the run finished since is counted: {compared}"
    );
}

/// The JSON answer of `target` once its `freshness` says it is fresh and was computed
/// over `finished` runs (asked again every 200 ms, within 60 s).
async fn until_fresh(port: u16, target: &str, finished: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let answer = body_json(&get(port, target, &[]).await);
        let freshness = &answer["freshness"];
        if freshness["stale"] == false && freshness["runs_finished"].as_u64() == Some(finished) {
            return answer;
        }
        assert!(
            Instant::now() < deadline,
            "{target} never fresh over {finished} runs: {freshness}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The page of a run still going shows the events published after it opened, then the
/// run's end, without a reload (a value the test left on the page survives).
async fn check_live_run_page(
    client: &Client,
    base: &str,
    js: &async_nats::jetstream::Context,
    sink: &crate::common::SinkToClickHouse,
) {
    let mut run = RunEvents::new("task-live-page", "bench/model-b:raw");
    publish(js, &run.start()).await;
    publish(js, &run.step(StepType::Reason, "first thought")).await;
    sink.wait_for(
        &format!(
            "SELECT count() FROM benchstream.events_raw FINAL WHERE run_id = toUUID('{}')",
            run.id()
        ),
        "2",
    )
    .await;
    client
        .goto(&format!("{base}/runs/{}", run.id()))
        .await
        .expect("open the run page");
    let state = wait_text(client, "#run-state", |_| true).await;
    assert_eq!(state, "running (no run_stop yet)");
    client
        .execute("window.__kept = 7; return null", vec![])
        .await
        .expect("script");
    wait_listening(client).await;
    let output = "LIVE-OUTPUT-41c9: 3 passed";
    for event in run.tool("bash: pytest -q", output) {
        publish(js, &event).await;
    }
    wait_text(client, "#trajectory", |t| t.contains(output)).await;
    publish(js, &run.stop(true, None)).await;
    let state = wait_text(client, "#run-state", |t| t.starts_with("finished")).await;
    assert!(state.contains("solved"), "{state}");
    let kept: Value = client
        .execute("return window.__kept", vec![])
        .await
        .expect("script");
    assert_eq!(kept, 7, "the page was not reloaded");
}

/// Waits until the page's script listens to `/api/live` (within 20 s).
async fn wait_listening(client: &Client) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let state = "return document.body.getAttribute('data-live-state')";
    while client.execute(state, vec![]).await.expect("script") != "open" {
        assert!(
            Instant::now() < deadline,
            "the page never listened to /api/live"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The run page: the known tool output, the diff rendered, the hostile step as text.
async fn check_run_page(client: &Client, base: &str, run_a: &str) {
    client
        .goto(&format!("{base}/runs/{run_a}"))
        .await
        .expect("open the run page");
    let trajectory = wait_text(client, "#trajectory", |t| t.contains(KNOWN_OUTPUT)).await;
    assert!(
        trajectory.contains(HOSTILE),
        "the hostile step is shown as text"
    );
    let pwned: Value = client
        .execute("return window.__pwned === undefined", vec![])
        .await
        .expect("script");
    assert_eq!(pwned, Value::Bool(true), "no script from an event ran");
    let injected = client
        .find_all(Locator::Css("main img, main script"))
        .await
        .expect("query");
    assert!(injected.is_empty(), "no element made of an event's text");
    let diff = wait_text(client, "#diff", |t| t.contains("+fixed line")).await;
    assert!(diff.contains("-broken line"));
    let flipped = wait_text(client, "#tests tr.flipped", |_| true).await;
    assert!(flipped.contains("test_flipped"), "{flipped}");
    screenshot(client, "run").await;
}

/// Two runs side by side: step 4 is the first where they differ.
async fn check_side_by_side(client: &Client, base: &str, run_a: &str, run_b: &str) {
    client
        .goto(&format!("{base}/tasks/{TASK}?a={run_a}&b={run_b}"))
        .await
        .expect("open the task page");
    let divergence = wait_text(client, "#divergence", |_| true).await;
    assert_eq!(divergence, "The runs diverge at step 4.");
    let first = client
        .find(Locator::Css("#side-by-side .first"))
        .await
        .expect("marked");
    assert_eq!(
        first.attr("data-step").await.expect("attribute").as_deref(),
        Some("4")
    );
    let groups = wait_text(client, "main", |_| true).await;
    assert!(groups.contains("bench/model-a:raw") && groups.contains("bench/model-b:raw"));
}

/// A run started after the experiment page opened appears on it, then finishes, without
/// a reload (a value the test left on the page survives).
async fn check_live_run(
    client: &Client,
    base: &str,
    port: u16,
    js: &async_nats::jetstream::Context,
) {
    client
        .goto(&format!("{base}/experiments/{EXPERIMENT}"))
        .await
        .expect("open the experiment page");
    let progress = wait_text(client, "#progress", |_| true).await;
    assert!(progress.starts_with("Done 2 of 3 planned"), "{progress}");
    let decided = wait_text(client, "#decisions td.decision", |_| true).await;
    assert_eq!(decided, "candidate_better");
    client
        .execute("window.__kept = 42; return null", vec![])
        .await
        .expect("script");
    // The page's script listens before the run starts (the server subscribed it before
    // answering, so the run's events reach it).
    wait_listening(client).await;
    let listeners = body_json(&get(port, "/api/status", &[]).await)["listeners"].as_u64();
    assert!(listeners >= Some(1), "{listeners:?}");
    let mut live = RunEvents::new("task-live", "bench/model-a:raw");
    publish(js, &live.start()).await;
    let row = format!("tr[data-run='{}'] td.state", live.id());
    wait_text(client, &row, |t| t == "running").await;
    for event in live.tool("bash: make test", "ok") {
        publish(js, &event).await;
    }
    publish(js, &live.stop(true, None)).await;
    // Until the row shows the run's end as stored (a refresh may land between the
    // sink's writes of the run's tables); it fails with the last state shown.
    wait_text(client, &row, |t| t == "submitted · solved").await;
    wait_text(client, "#progress .done", |t| t == "3").await;
    // The leaderboard and grid kept for the experiment were computed again.
    wait_text(client, "#grid a[href^='/tasks/task-live#']", |t| t == "1/1").await;
    let kept: Value = client
        .execute("return window.__kept", vec![])
        .await
        .expect("script");
    assert_eq!(kept, 42, "the page was not reloaded");
    screenshot(client, "experiment").await;
}

/// A run of `policy` on `task`, started and finished (solved).
fn finished_run(task: &str, policy: &str) -> Vec<BenchmarkEvent> {
    let mut run = RunEvents::new(task, policy);
    vec![run.start(), run.stop(true, None)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_answers_are_served_marked_updating_after_a_run_finishes_and_a_first_computation_is_shown_when_ready(
) {
    let (nats, sink) = start_pipeline().await;
    let js = jetstream(&nats.url()).await;
    // Runs whose start and stop are both stored (the sink writes each table apart).
    let stored = "SELECT count() FROM benchstream.run_stops FINAL \
                  WHERE run_id IN (SELECT run_id FROM benchstream.run_starts)";
    let mut events = finished_run("task-1", "bench/model-a:raw");
    events.extend(finished_run("task-1", "bench/model-b:raw"));
    for event in &events {
        publish(&js, event).await;
    }
    sink.wait_for(stored, "2").await;
    // No NATS and a poll an hour apart: after its first look, the background computes
    // nothing again by itself, so only requests can notice the new run. Pages wait 1 ms
    // for an answer never computed.
    let url = sink.clickhouse.http_url();
    let (port, stop) = start_viewer(&[
        "--clickhouse-url",
        &url,
        "--refresh-poll-ms",
        "3600000",
        "--page-wait-ms",
        "1",
    ])
    .await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while body_json(&get(port, "/api/status", &[]).await)["ahead"]["warmed_up_ms"].is_null() {
        assert!(Instant::now() < deadline, "the background never warmed up");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The comparison the experiment page links was computed ahead: fresh at once.
    let compared = body_json(&get(port, COMPARE, &[]).await);
    assert_eq!(
        (
            compared["freshness"]["stale"].as_bool(),
            compared["freshness"]["runs_finished"].as_u64()
        ),
        (Some(false), Some(2)),
        "{compared}"
    );
    assert_eq!(counted_runs(&compared, "bench/model-a:raw"), Some(1));

    // A comparison never computed (not the one linked): its page says it is being
    // computed, at once, and fetches itself again; the JSON waits for it; then the page
    // shows it.
    let other = format!("/compare?experiment={EXPERIMENT}&baseline=bench%2Fmodel-b%3Araw");
    let page = get(port, &other, &[]).await;
    let html = String::from_utf8_lossy(&page.body);
    assert!(
        page.status == 200
            && html.contains("Computing the comparison for the first time")
            && html.contains("data-stale=\"true\"")
            && !html.contains("id=\"compare-pairs\""),
        "{html}"
    );
    let answer = body_json(&get(port, &format!("/api{other}"), &[]).await);
    assert_eq!(
        answer["comparisons"][0]["baseline"], "bench/model-b:raw",
        "{answer}"
    );
    let page = get(port, &other, &[]).await;
    let html = String::from_utf8_lossy(&page.body);
    assert!(
        html.contains("id=\"compare-pairs\"") && html.contains("data-stale=\"false\""),
        "{html}"
    );

    for event in finished_run("task-2", "bench/model-a:raw") {
        publish(&js, &event).await;
    }
    sink.wait_for(stored, "3").await;
    // The first request of each after the run finished gets the kept answer at once,
    // labelled as being updated.
    let page = get(
        port,
        &format!("/compare?experiment={EXPERIMENT}&baseline=bench%2Fmodel-a%3Araw"),
        &[],
    )
    .await;
    let html = String::from_utf8_lossy(&page.body);
    assert!(
        html.contains("data-stale=\"true\"")
            && html.contains("Updating: 1 run finished and 1 started since")
            && html.contains("over 2 finished runs of 2 started"),
        "{html}"
    );
    let standing = body_json(&get(port, &format!("/api/experiments/{EXPERIMENT}"), &[]).await);
    let freshness = &standing["freshness"];
    assert_eq!(
        (
            freshness["stale"].as_bool(),
            freshness["runs_finished"].as_u64(),
            freshness["runs_finished_since"].as_u64()
        ),
        (Some(true), Some(2), Some(1)),
        "{standing}"
    );
    assert_eq!(standing["progress"]["done"].as_u64(), Some(3), "read fresh");
    assert_eq!(
        standing["tasks"],
        serde_json::json!(["task-1"]),
        "the kept grid"
    );

    // Later the fresh answers, computed in the background, count the run.
    let compared = until_fresh(port, COMPARE, 3).await;
    assert_eq!(counted_runs(&compared, "bench/model-a:raw"), Some(2));
    let path = format!("/api/experiments/{EXPERIMENT}");
    let standing = until_fresh(port, &path, 3).await;
    assert_eq!(standing["tasks"], serde_json::json!(["task-1", "task-2"]));
    let page = get(port, &format!("/experiments/{EXPERIMENT}"), &[]).await;
    let html = String::from_utf8_lossy(&page.body);
    assert!(
        html.contains("data-stale=\"false\"") && html.contains("over 3 finished runs of 3 started"),
        "{html}"
    );
    stop.cancel();
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_clickhouse_or_nats_pages_say_so_and_the_server_keeps_answering() {
    // Nothing listens on this port: every read fails.
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let (port, stop) =
        start_viewer(&["--clickhouse-url", &nowhere, "--query-timeout-ms", "5000"]).await;
    let page = get(port, "/", &[]).await;
    assert_eq!(page.status, 500);
    let html = String::from_utf8_lossy(&page.body);
    assert!(html.contains("class=\"error\""), "{html}");
    assert!(
        html.contains("live updates off: no --nats-url given"),
        "{html}"
    );
    let api = get(port, "/api/experiments", &[]).await;
    assert_eq!(api.status, 500);
    assert!(body_json(&api)["error"]
        .as_str()
        .is_some_and(|e| e.contains("ClickHouse")));
    assert_eq!(get(port, "/api/live", &[]).await.status, 503);
    let status = get(port, "/api/status", &[]).await;
    assert_eq!(
        (status.status, body_json(&status)["live"].clone()),
        (200, Value::Bool(false))
    );
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_bearer_token_only_requests_carrying_it_are_answered() {
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let (port, stop) =
        start_viewer(&["--clickhouse-url", &nowhere, "--bearer-token", "s3cret"]).await;
    assert_eq!(get(port, "/api/status", &[]).await.status, 401);
    let wrong = [("Authorization", "Bearer nope")];
    assert_eq!(get(port, "/api/status", &wrong).await.status, 401);
    let right = [("Authorization", "Bearer s3cret")];
    assert_eq!(get(port, "/api/status", &right).await.status, 200);
    // A link with ?token= sets the cookie and sends the browser on without the token.
    let login = get(port, "/api/status?token=s3cret", &[]).await;
    assert_eq!(login.status, 303);
    assert_eq!(header(&login, "location"), Some("/api/status"));
    let cookie = header(&login, "set-cookie").expect("a cookie");
    let pair = cookie.split(';').next().expect("name=value");
    assert_eq!(
        get(port, "/api/status", &[("Cookie", pair)]).await.status,
        200
    );
    assert_eq!(get(port, "/api/status?token=nope", &[]).await.status, 401);
    stop.cancel();
}

#[test]
fn a_non_loopback_address_without_a_token_is_refused_naming_the_flag() {
    let output = run_to_exit(
        Command::new(workspace_binary("bench-analysis"))
            .args(["serve", "--listen", "0.0.0.0:0"])
            .env_remove("BENCH_SERVE_BEARER_TOKEN")
            .env_remove("BENCH_SERVE_LISTEN"),
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--bearer-token") && stderr.contains("0.0.0.0:0"),
        "{stderr}"
    );
}
