//! A real 3-node `nats-server` cluster with JetStream for one test.
//!
//! Each node runs the deployed `deploy/nats/cluster/node-N.conf` (so tests exercise the
//! shipped cluster config, `common.conf` included) with free loopback ports given on the
//! command line (`-p`, `-m`, `--cluster`, `--routes` win over the file) and its own store
//! in the cluster's [`TempDir`]. [`NatsCluster::start`] returns once every node answers
//! and the JetStream meta group has a leader. Every node is killed on drop.

use std::fs;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::http;
use super::nats::store_dir_env;
use super::port::free_port;
use super::process::{find_binary, ServerCommand, ServerProcess, PROBE_TIMEOUT, READY_TIMEOUT};

/// Nodes of the cluster (the configs in `deploy/nats/cluster/`).
pub const NODES: usize = 3;

/// One node of a [`NatsCluster`].
#[derive(Debug)]
struct Node {
    /// The child process. Declared first so it is killed before the store is deleted.
    process: ServerProcess,
    /// `server_name` of the node's config, e.g. `benchstream-nats-1`.
    name: String,
    /// Client port.
    port: u16,
    /// Monitoring port.
    http_port: u16,
}

/// Three `nats-server` processes forming one JetStream cluster on loopback.
#[derive(Debug)]
pub struct NatsCluster {
    nodes: Vec<Node>,
    /// Owns stores and logs; deleted on drop (after the nodes).
    _dir: TempDir,
}

impl NatsCluster {
    /// Starts the three nodes and waits until JetStream has a meta leader.
    ///
    /// # Panics
    ///
    /// If `nats-server` is missing or the cluster is not ready within the harness's
    /// ready timeout; the message quotes the node logs.
    pub fn start() -> Self {
        let binary = find_binary("nats-server");
        let dir = tempfile::Builder::new()
            .prefix("bench-nats-cluster-")
            .tempdir()
            .expect("create temp dir for the nats cluster");
        let ports: Vec<(u16, u16, u16)> = (0..NODES)
            .map(|_| (free_port(), free_port(), free_port()))
            .collect();
        let routes = ports
            .iter()
            .map(|(_, route, _)| format!("nats://127.0.0.1:{route}"))
            .collect::<Vec<_>>()
            .join(",");
        let nodes: Vec<Node> = ports
            .iter()
            .enumerate()
            .map(|(i, &(port, route, http_port))| {
                prepare_node(&binary, dir.path(), i + 1, port, route, http_port, &routes)
            })
            .collect();
        for node in &nodes {
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, node.port));
            if let Err(failure) = node
                .process
                .spawn(|| TcpStream::connect_timeout(&addr, PROBE_TIMEOUT).is_ok())
            {
                panic!("{}", node.process.failure_message(&failure));
            }
        }
        let cluster = NatsCluster { nodes, _dir: dir };
        let deadline = Instant::now() + READY_TIMEOUT;
        while !cluster.is_ready() {
            if Instant::now() > deadline {
                let logs: Vec<String> =
                    cluster.nodes.iter().map(|n| n.process.log_tail()).collect();
                panic!(
                    "nats cluster has no JetStream meta leader after {READY_TIMEOUT:?}\n{}",
                    logs.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        cluster
    }

    /// Every node's client URL, comma-separated (what runner and sink take).
    pub fn urls(&self) -> String {
        (0..NODES)
            .map(|i| self.url(i))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The client URL of node `index` (0-based).
    pub fn url(&self, index: usize) -> String {
        format!("nats://127.0.0.1:{}", self.nodes[index].port)
    }

    /// The index of the node whose `server_name` is `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// Kills node `index` with SIGKILL, like a crashed host.
    pub fn kill(&self, index: usize) {
        self.nodes[index].process.kill();
    }

    /// Whether node `index` runs.
    pub fn is_running(&self, index: usize) -> bool {
        self.nodes[index].process.is_running()
    }

    /// Every running node answers `/healthz` and knows the meta leader.
    fn is_ready(&self) -> bool {
        self.nodes
            .iter()
            .filter(|n| n.process.is_running())
            .all(|node| {
                http::request(node.http_port, "GET", "/jsz", b"", PROBE_TIMEOUT).is_ok_and(|r| {
                    r.status == 200
                        && serde_json::from_slice::<serde_json::Value>(&r.body).is_ok_and(|v| {
                            v.pointer("/meta_cluster/leader")
                                .and_then(serde_json::Value::as_str)
                                .is_some_and(|leader| !leader.is_empty())
                        })
                })
            })
    }
}

fn prepare_node(
    binary: &Path,
    dir: &Path,
    number: usize,
    port: u16,
    route: u16,
    http_port: u16,
    routes: &str,
) -> Node {
    let node_dir = dir.join(format!("node-{number}"));
    let store = node_dir.join("store");
    fs::create_dir_all(&store).unwrap_or_else(|e| panic!("create {}: {e}", store.display()));
    let config = config_dir().join(format!("node-{number}.conf"));
    let args = [
        "-c".into(),
        config.into_os_string(),
        "-a".into(),
        "127.0.0.1".into(),
        "-p".into(),
        port.to_string().into(),
        "-m".into(),
        http_port.to_string().into(),
        "--cluster".into(),
        format!("nats://127.0.0.1:{route}").into(),
        "--routes".into(),
        routes.into(),
    ];
    Node {
        process: ServerProcess::new(ServerCommand {
            name: "nats-server",
            program: binary.to_path_buf(),
            args: args.to_vec(),
            envs: vec![store_dir_env(&store)],
            working_dir: node_dir.clone(),
            log_path: node_dir.join("nats-server.log"),
            server_logs: Vec::new(),
        }),
        name: format!("benchstream-nats-{number}"),
        port,
        http_port,
    }
}

/// `deploy/nats/cluster/` of this checkout.
fn config_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/nats/cluster")
}
