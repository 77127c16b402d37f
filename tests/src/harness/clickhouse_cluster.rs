//! A real ClickHouse cluster for one test: one ZooKeeper and 2 shards × 2 replicas of
//! `clickhouse-server`, the topology of `deploy/clickhouse/cluster/`.
//!
//! Each server runs the usual test config ([`ClickHouseServer`]) plus the shipped
//! `deploy/clickhouse/cluster/cluster.xml.in` rendered with this cluster's ports as a
//! `config.d` file; ZooKeeper runs `zoo.cfg.in` with a small Java heap. All ports are
//! picked before anything starts, because every server's config names every other one.
//! [`ClickHouseCluster::start`] returns once every server answers and has a ZooKeeper
//! session. Everything is killed on drop.

use std::fs;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};
use std::{io::Read, io::Write};

use tempfile::TempDir;

use super::clickhouse::{ClickHouseServer, Ports};
use super::port::free_port;
use super::process::{
    self, find_binary, Server, ServerCommand, ServerProcess, PROBE_TIMEOUT, READY_TIMEOUT,
};

/// The cluster's name in `remote_servers` (what `event-sink --cluster` takes).
pub const CLUSTER_NAME: &str = "benchstream";

/// The cluster of one replica per shard (`replica 1` of each) that migrations send their
/// `ALTER ... ON CLUSTER` to (`[clickhouse] alter_cluster`, `cluster.xml.in`).
pub const ALTER_CLUSTER_NAME: &str = "benchstream_alter";

/// Shards of the cluster.
pub const SHARDS: usize = 2;
/// Replicas of each shard.
pub const REPLICAS: usize = 2;

/// `config.d` part of each server; placeholders are filled by [`render_cluster_config`].
const CLUSTER_TEMPLATE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../deploy/clickhouse/cluster/cluster.xml.in"
));

/// ZooKeeper's config; placeholders `@DIR@` and `@PORT@`.
const ZOO_TEMPLATE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../deploy/clickhouse/cluster/zoo.cfg.in"
));

/// Debian's ZooKeeper jar (its manifest names its dependencies) and the one slf4j binding
/// that logs to stderr, so the log says why a start failed ("Address already in use").
/// With all of `/usr/share/java` on the classpath slf4j may bind the no-op logger.
const ZOOKEEPER_CLASSPATH: &str = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar";

/// Java heap of the test ZooKeeper.
const ZOOKEEPER_HEAP: &str = "-Xmx96m";

/// A standalone ZooKeeper on a free loopback port.
#[derive(Debug)]
pub struct ZooKeeper {
    /// The java process. Declared first so it is killed before its directory goes.
    process: ServerProcess,
    /// Client port.
    port: u16,
}

impl ZooKeeper {
    /// Prepares the config and data dir under `dir`; nothing runs yet.
    fn prepare(dir: &Path) -> Self {
        let port = free_port();
        fs::create_dir_all(dir.join("data"))
            .unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        let config = ZOO_TEMPLATE
            .replace("@DIR@", &dir.to_string_lossy())
            .replace("@PORT@", &port.to_string());
        let config_path = dir.join("zoo.cfg");
        fs::write(&config_path, config)
            .unwrap_or_else(|e| panic!("write {}: {e}", config_path.display()));
        let args = [
            ZOOKEEPER_HEAP.into(),
            "-Xms16m".into(),
            "-XX:+UseSerialGC".into(),
            "-cp".into(),
            ZOOKEEPER_CLASSPATH.into(),
            "org.apache.zookeeper.server.quorum.QuorumPeerMain".into(),
            config_path.into_os_string(),
        ];
        Self {
            process: ServerProcess::new(ServerCommand {
                name: "zookeeper",
                program: find_binary("java"),
                args: args.to_vec(),
                envs: Vec::new(),
                working_dir: dir.to_path_buf(),
                log_path: dir.join("zookeeper.log"),
                server_logs: Vec::new(),
            }),
            port,
        }
    }

    /// Client port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills ZooKeeper with SIGKILL. No-op if stopped.
    pub fn kill(&self) {
        self.process.kill();
    }

    /// Stops ZooKeeper if it runs and starts it again on the same port and data.
    pub fn restart(&self) {
        process::restart(self);
    }
}

impl Server for ZooKeeper {
    fn process(&self) -> &ServerProcess {
        &self.process
    }

    /// Ready = serves sessions: the `stat` four-letter command names the server's mode
    /// (`ruok` answers before the data is loaded, when sessions are still refused).
    fn is_ready(&self) -> bool {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let Ok(mut stream) = TcpStream::connect_timeout(&addr, PROBE_TIMEOUT) else {
            return false;
        };
        let mut answer = String::new();
        stream.set_read_timeout(Some(PROBE_TIMEOUT)).is_ok()
            && stream.write_all(b"stat").is_ok()
            && stream.read_to_string(&mut answer).is_ok()
            && answer.lines().any(|line| line.starts_with("Mode: "))
    }
}

/// ZooKeeper and four `clickhouse-server`s forming the cluster [`CLUSTER_NAME`].
#[derive(Debug)]
pub struct ClickHouseCluster {
    /// Shard-major: shard 1 replica 1, shard 1 replica 2, shard 2 replica 1, ...
    servers: Vec<ClickHouseServer>,
    zookeeper: ZooKeeper,
    /// ZooKeeper's data; deleted on drop, after the processes.
    _dir: TempDir,
}

impl ClickHouseCluster {
    /// Starts ZooKeeper, then the four servers, and waits until every server has a
    /// ZooKeeper session.
    ///
    /// # Panics
    ///
    /// If a binary is missing (`deploy/local/install.sh`) or a process is not ready in
    /// time; the message quotes its log.
    pub fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("bench-zookeeper-")
            .tempdir()
            .expect("create temp dir for zookeeper");
        let zookeeper = process::start_on_free_ports(|| ZooKeeper::prepare(dir.path()));
        let binary = find_binary("clickhouse-server");
        let ports: Vec<Ports> = (0..SHARDS * REPLICAS).map(|_| Ports::free()).collect();
        let servers: Vec<ClickHouseServer> = ports
            .iter()
            .enumerate()
            .map(|(i, &own)| {
                let config = render_cluster_config(
                    i / REPLICAS + 1,
                    i % REPLICAS + 1,
                    zookeeper.port,
                    &ports,
                );
                ClickHouseServer::prepare(&binary, own, Some(&config))
            })
            .collect();
        for server in &servers {
            server.spawn();
        }
        let cluster = Self {
            servers,
            zookeeper,
            _dir: dir,
        };
        cluster.wait_for_zookeeper_sessions();
        cluster
    }

    /// The server of `shard` and `replica` (both 1-based).
    pub fn server(&self, shard: usize, replica: usize) -> &ClickHouseServer {
        assert!((1..=SHARDS).contains(&shard) && (1..=REPLICAS).contains(&replica));
        &self.servers[(shard - 1) * REPLICAS + replica - 1]
    }

    /// Every server, shard-major.
    pub fn servers(&self) -> &[ClickHouseServer] {
        &self.servers
    }

    /// The HTTP URL of shard 1 replica 1, where clients connect.
    pub fn http_url(&self) -> String {
        self.servers[0].http_url()
    }

    /// The cluster's ZooKeeper.
    pub fn zookeeper(&self) -> &ZooKeeper {
        &self.zookeeper
    }

    /// Waits until every running server reads ZooKeeper (after a start or a ZooKeeper
    /// restart: sessions are re-established in the background).
    ///
    /// # Panics
    ///
    /// If one does not within the harness's ready timeout.
    pub fn wait_for_zookeeper_sessions(&self) {
        let deadline = Instant::now() + READY_TIMEOUT * 3;
        for server in self.servers.iter().filter(|s| s.is_running()) {
            while server
                .try_query("SELECT count() > 0 FROM system.zookeeper WHERE path = '/'")
                .map_or(true, |answer| answer.trim() != "1")
            {
                assert!(
                    Instant::now() < deadline,
                    "clickhouse-server {} has no ZooKeeper session; log: {}",
                    server.http_url(),
                    server.log_path().display()
                );
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// Fills the `config.d` template for the server of `shard` and `replica` (1-based), with
/// `ports` of all servers (shard-major).
fn render_cluster_config(shard: usize, replica: usize, zookeeper: u16, ports: &[Ports]) -> String {
    let mut config = CLUSTER_TEMPLATE
        .replace("@SHARD@", &shard.to_string())
        .replace("@REPLICA@", &format!("s{shard}r{replica}"))
        .replace("@ZK_PORT@", &zookeeper.to_string());
    for (i, port) in ports.iter().enumerate() {
        let placeholder = format!("@S{}R{}_TCP_PORT@", i / REPLICAS + 1, i % REPLICAS + 1);
        config = config.replace(&placeholder, &port.tcp.to_string());
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_template_is_fully_rendered() {
        let ports: Vec<Ports> = (0..4u16)
            .map(|i| Ports {
                http: 100 + i,
                tcp: 200 + i,
                interserver: 300 + i,
            })
            .collect();
        let config = render_cluster_config(2, 1, 2181, &ports);
        assert!(!config.contains("@"), "placeholder left in {config}");
        assert!(config.contains("<shard>2</shard>"));
        assert!(config.contains("<replica>s2r1</replica>"));
        assert!(config.contains("<port>203</port>"));
        assert!(config.contains("<port>2181</port>"));
    }
}
