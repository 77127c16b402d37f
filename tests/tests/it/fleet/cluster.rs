//! The 3-node cluster: a run keeps delivering while the node leading its R3 stream is
//! killed, and `deploy/nats/cluster/cluster.sh` starts and stops the cluster.

use std::process::Command;

use async_nats::jetstream;
use bench_delivery::PublishSetup;
use bench_nats::{NatsConfig, StreamSpec};
use bench_schemas::{Payload, SubjectPrefix};
use benchstream_tests::free_port;
use benchstream_tests::harness::NatsCluster;
use tokio_util::sync::CancellationToken;

use crate::common::{publish_setup, repo_path, slow_steps_config, sorted_seqs, stream_messages};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn run_keeps_delivering_when_a_cluster_node_dies() {
    let cluster = tokio::task::spawn_blocking(NatsCluster::start)
        .await
        .expect("cluster");
    let spec = StreamSpec {
        replicas: 3,
        ..StreamSpec::default()
    };
    let client = bench_nats::connect(&NatsConfig::plain(cluster.urls()), false)
        .await
        .expect("connect");
    let js = jetstream::new(client);
    let mut stream = spec.ensure(&js, true).await.expect("R3 stream");
    let info = stream.info().await.expect("stream info").clone();
    assert_eq!(info.config.num_replicas, 3);
    let leader = info
        .cluster
        .and_then(|c| c.leader)
        .and_then(|name| cluster.index_of(&name))
        .expect("stream leader is a node");

    let dir = tempfile::tempdir().expect("dir");
    let setup: PublishSetup = publish_setup(&cluster.urls(), &SubjectPrefix::default(), dir.path());
    let config = slow_steps_config(setup, dir.path());
    let run = tokio::spawn(agent_runner::run(config, CancellationToken::new()));

    // Kill the stream leader once the run is under way.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert!(
        !run.is_finished(),
        "the run must still be going when the node dies"
    );
    cluster.kill(leader);
    let report = run.await.expect("run task").expect("run");
    assert_eq!(report.undelivered(), 0, "{report}");
    let run_id = report.runs[0].run_id;
    let events = report.runs[0].events;

    let survivor = (leader + 1) % 3;
    let stored = stream_messages(&cluster.url(survivor), &spec).await;
    let mut seqs = sorted_seqs(&stored, run_id);
    seqs.dedup();
    assert_eq!(seqs, (0..events).collect::<Vec<_>>(), "every event, no gap");
    assert!(stored
        .iter()
        .any(|m| m.event.run_id == run_id && matches!(m.event.payload, Payload::RunStop(_))));
    assert!(!cluster.is_running(leader));
}

#[test]
fn cluster_script_starts_and_stops_three_nodes() {
    // Ports are picked free but another test may take one before the nodes bind it (a
    // node then exits at start-up), so `up` gets a few tries on fresh ports, as the
    // harness does for single servers.
    let mut tries = 0;
    let cluster = loop {
        tries += 1;
        let cluster = ScriptCluster::new();
        let up = cluster.sh("up");
        if up.status.success() {
            break cluster;
        }
        let stderr = String::from_utf8_lossy(&up.stderr).into_owned();
        assert!(
            tries < 3 && stderr.contains("exited during start-up"),
            "up: {stderr}"
        );
    };
    let status = cluster.sh("status");
    let text = String::from_utf8_lossy(&status.stdout).into_owned();
    let down = cluster.sh("down");
    assert!(status.status.success(), "status: {text}");
    assert_eq!(text.matches(" running ").count(), 3, "{text}");
    assert!(text.contains("meta leader: benchstream-nats-"), "{text}");
    assert!(down.status.success());
    let after = cluster.sh("status");
    assert_eq!(after.status.code(), Some(3), "all stopped after down");
}

/// `deploy/nats/cluster/cluster.sh` on fresh ports and its own state dir; `down` on drop,
/// so a failed test leaves no node running.
struct ScriptCluster {
    dir: tempfile::TempDir,
    env: [(&'static str, String); 3],
}

impl ScriptCluster {
    fn new() -> Self {
        ScriptCluster {
            dir: tempfile::tempdir().expect("dir"),
            env: [
                ("BENCH_CLUSTER_CLIENT_BASE", port_base().to_string()),
                ("BENCH_CLUSTER_ROUTE_BASE", port_base().to_string()),
                ("BENCH_CLUSTER_MONITOR_BASE", port_base().to_string()),
            ],
        }
    }

    fn sh(&self, command: &str) -> std::process::Output {
        Command::new("bash")
            .arg(repo_path("deploy/nats/cluster/cluster.sh"))
            .arg(command)
            .env("BENCH_CLUSTER_DIR", self.dir.path())
            .envs(self.env.iter().cloned())
            .output()
            .expect("run cluster.sh")
    }
}

impl Drop for ScriptCluster {
    fn drop(&mut self) {
        let _ = self.sh("down");
    }
}

/// A base port such that base+1..=base+3 are free (the script numbers nodes from 1).
fn port_base() -> u16 {
    loop {
        let p = free_port();
        if p < 60_000 && (1..=3).all(|i| std::net::TcpListener::bind(("127.0.0.1", p + i)).is_ok())
        {
            return p;
        }
    }
}
