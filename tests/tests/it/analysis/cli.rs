//! `bench-analysis` as a process, and `event-sink query` / `report`, its aliases: the same
//! answer from both over a real ClickHouse, usage errors as exit status 2, each
//! subcommand's own flags, and a clear error when the alias finds no `bench-analysis`.
//!
//! Both binaries come from the `cargo build` before the tests ([`workspace_binary`]).

use std::process::Command;

use benchstream_tests::cli::{
    assert_clickhouse_only_help, assert_config_error, assert_unreachable_error, help, run_to_exit,
    workspace_binary,
};
use benchstream_tests::free_port;

use super::{seeded_clickhouse, DATABASE};

fn analysis() -> Command {
    Command::new(workspace_binary("bench-analysis"))
}

fn sink() -> Command {
    Command::new(workspace_binary("event-sink"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_sink_alias_prints_what_bench_analysis_prints() {
    let (server, _client) = seeded_clickhouse().await;
    let url = server.http_url();
    let connection = ["--clickhouse-url", &url, "--clickhouse-database", DATABASE];
    for query in [
        &["leaderboard"][..],
        &[
            "leaderboard",
            "--format",
            "csv",
            "--param",
            "policy=openai/gpt-4o:raw",
        ][..],
        &["lost_events", "--format", "json"][..],
    ] {
        let direct = run_to_exit(analysis().arg("query").args(query).args(connection));
        let alias = run_to_exit(sink().arg("query").args(query).args(connection));
        let stdout = String::from_utf8_lossy(&direct.stdout);
        assert!(
            direct.status.success(),
            "{query:?}: {}",
            String::from_utf8_lossy(&direct.stderr)
        );
        assert_eq!(alias.status.code(), Some(0), "{query:?}");
        assert_eq!(alias.stdout, direct.stdout, "{query:?}");
        // The answer is the data, not an empty success.
        assert!(stdout.contains("openai/gpt-4o"), "{query:?}: {stdout}");
    }
    for compare in [
        &["--format", "json"][..],
        &["--by", "model", "--format", "csv"][..],
        &["--baseline", "openai/gpt-4o:raw"][..],
    ] {
        let direct = run_to_exit(analysis().arg("compare").args(compare).args(connection));
        let alias = run_to_exit(sink().arg("compare").args(compare).args(connection));
        let stdout = String::from_utf8_lossy(&direct.stdout);
        assert!(
            direct.status.success(),
            "{compare:?}: {}",
            String::from_utf8_lossy(&direct.stderr)
        );
        assert_eq!(alias.status.code(), Some(0), "{compare:?}");
        assert_eq!(alias.stdout, direct.stdout, "{compare:?}");
        assert!(stdout.contains("gpt-4o"), "{compare:?}: {stdout}");
    }
    // A policy with no runs is a usage error, and says which policies there are.
    let out = run_to_exit(
        analysis()
            .args(["compare", "--baseline", "no/such:policy"])
            .args(connection),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("openai/gpt-4o:raw"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_sink_alias_writes_the_same_report() {
    let (server, _client) = seeded_clickhouse().await;
    let url = server.http_url();
    let dir = tempfile::tempdir().expect("tempdir");
    let pages: Vec<String> = [analysis(), sink()]
        .into_iter()
        .zip(["direct.html", "alias.html"])
        .map(|(mut command, name)| {
            let out = dir.path().join(name);
            let done = run_to_exit(command.args(["report", "--out"]).arg(&out).args([
                "--clickhouse-url",
                &url,
                "--clickhouse-database",
                DATABASE,
            ]));
            assert!(done.status.success(), "{name}: {done:?}");
            let page = std::fs::read_to_string(&out).expect("report written");
            // The page is the same but for the second it was generated in.
            let (head, rest) = page.split_once("<p>Generated ").expect("generated at");
            let (_, tail) = rest.split_once(" UTC.").expect("generated at");
            format!("{head}{tail}")
        })
        .collect();
    assert!(pages[0].contains("openai/gpt-4o:raw"));
    assert_eq!(pages[0], pages[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_of_a_policy_nobody_ran_is_a_usage_error_not_an_empty_page() {
    let (server, _client) = seeded_clickhouse().await;
    let url = server.http_url();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("report.html");
    let done = run_to_exit(
        analysis()
            .args(["report", "--policy", "nosuch", "--out"])
            .arg(&out)
            .args(["--clickhouse-url", &url, "--clickhouse-database", DATABASE]),
    );
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("nosuch"), "{stderr}");
    assert!(!out.exists(), "no page written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_cfg_splits_the_leaderboard_from_the_flag_or_its_variable() {
    let (server, _client) = seeded_clickhouse().await;
    let url = server.http_url();
    let connection = ["--clickhouse-url", &url, "--clickhouse-database", DATABASE];
    let policy = ["--param", "policy=openai/gpt-4o-mini:observation_masking"];
    let rows = |out: &std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).lines().count() - 1
    };
    let query = || {
        let mut command = analysis();
        command
            .args(["query", "leaderboard", "--format", "csv"])
            .args(policy)
            .args(connection);
        command
    };
    assert_eq!(rows(&run_to_exit(&mut query())), 1);
    assert_eq!(rows(&run_to_exit(query().args(["--by", "cfg"]))), 2);
    assert_eq!(rows(&run_to_exit(query().env("BENCH_QUERY_BY", "cfg"))), 2);
}

#[test]
fn invalid_query_parameters_are_usage_errors_through_the_alias_too() {
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    for params in [
        &["run_timeline", "--param", "run_id=not-a-uuid"][..],
        &["run_timeline"][..],
        &["leaderboard", "--param", "no_such=1"][..],
        &["leaderboard", "--param", "no-equals-sign"][..],
        &["no_such_query"][..],
    ] {
        for mut command in [analysis(), sink()] {
            let out = run_to_exit(
                command
                    .arg("query")
                    .args(params)
                    .args(["--clickhouse-url", &nowhere]),
            );
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{params:?}: {stderr}");
        }
    }
    for flags in [
        &["--by", "colour"][..],
        &["--margin", "2"][..],
        &["--resamples", "10"][..],
    ] {
        for mut command in [analysis(), sink()] {
            let out = run_to_exit(
                command
                    .arg("compare")
                    .args(flags)
                    .args(["--clickhouse-url", &nowhere]),
            );
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        }
    }
    // --log-format, read by the sink or passed on, and BENCH_LOG_FORMAT reach
    // bench-analysis.
    for (args, env) in [
        (
            &["query", "--log-format", "json", "run_timeline"][..],
            "text",
        ),
        (
            &["query", "run_timeline", "--log-format", "json"][..],
            "text",
        ),
        (&["query", "run_timeline"][..], "json"),
    ] {
        let out = run_to_exit(sink().args(args).env("BENCH_LOG_FORMAT", env));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with('{') && stderr.contains("--param run_id"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn each_subcommand_shows_only_its_own_flags() {
    for command in ["query", "report", "compare"] {
        let text = help(analysis(), &[command]);
        assert_clickhouse_only_help(command, &text);
        // `event-sink query --help` is bench-analysis's.
        assert_eq!(help(sink(), &[command]), text);
    }
}

#[test]
fn query_list_shows_every_description_whole() {
    let out = run_to_exit(analysis().args(["query", "list"]));
    assert!(out.status.success());
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.lines().all(|l| l.chars().count() <= 88),
        "{listing}"
    );
    let words = listing.split_whitespace().collect::<Vec<_>>().join(" ");
    // The end of lost_events' description is its tenth line.
    assert!(
        words.contains("last_seq and missing are NULL (unknown, not 0), and they are only checked for a missing run_stop."),
        "{listing}"
    );
    assert!(words.contains(
        "Buckets double from 250 ms; bucket 10 is 64 s and above (upper_ms NULL). \
         Empty buckets are omitted."
    ));
}

#[test]
fn the_alias_without_bench_analysis_says_how_to_build_it() {
    // A link to the sink in a directory of its own, and a PATH without bench-analysis.
    // In target/ (a link needs the same file system); removed on drop.
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let dir = tmp.path();
    let alone = dir.join("event-sink");
    std::fs::hard_link(workspace_binary("event-sink"), &alone)
        .or_else(|_| std::fs::copy(workspace_binary("event-sink"), &alone).map(drop))
        .expect("link event-sink");
    let out = run_to_exit(
        Command::new(&alone)
            .args(["query", "list"])
            .env("PATH", dir)
            .env("NO_COLOR", "1"),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(
        stderr.contains("bench-analysis query")
            && stderr.contains(&dir.display().to_string())
            && stderr.contains("cargo build -p bench-analysis"),
        "{stderr}"
    );
}

#[test]
fn a_bad_config_file_and_an_unreachable_clickhouse_are_named() {
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("sink.toml");
    std::fs::write(&config, "[clickhouse]\nurl = 8123\n").expect("write");
    let out = run_to_exit(
        analysis()
            .args(["query", "leaderboard", "--config"])
            .arg(&config),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_config_error(
        &stderr,
        &config,
        "line 2, column 7",
        "clickhouse.url",
        "url = 8123",
    );

    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let out = run_to_exit(analysis().args(["query", "leaderboard", "--clickhouse-url", &nowhere]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_unreachable_error(&stderr, &nowhere, "Connection refused");
}
