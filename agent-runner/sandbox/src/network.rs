//! The network of a sandbox whose run has `sandbox_limits.network_enabled`: a network
//! namespace of its own, connected to the outside by `pasta` (Debian `passt`), with no
//! path to the host's loopback or to anything else the host itself listens on.
//!
//! Per sandboxed command, [`PastaNetwork::start`] creates a named namespace
//! (`ip netns add bench-…`) and attaches `pasta` to it, which copies the host's addresses
//! and routes into it and forwards its traffic through sockets of its own. Options, from
//! pasta(1):
//! - `-T none -U none`: no forwarding of the namespace's loopback to the host's (the
//!   default `auto` would make every port the host binds on 127.0.0.1 reachable);
//! - `-t none -u none`: nothing of the host forwarded in;
//! - `--no-map-gw`: the gateway address is not remapped to the host's loopback.
//!
//! The namespace carries the host's own address, so connecting to it stays inside the
//! namespace. Services on other host addresses (a bridge, a second interface) are as
//! reachable as any outside address; the project's services listen on loopback.
//!
//! Attaching to a namespace needs `CAP_SYS_ADMIN` over it, so this mode needs a root
//! runner (`pasta --runas 0`: it keeps root, and pasta confines itself with its own
//! seccomp filter and namespaces). [`probe`] says why it cannot be had otherwise; the run
//! is then refused. Dropping the handle deletes the namespace, and pasta exits with it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where iproute2 keeps named network namespaces.
const NETNS_DIR: &str = "/run/netns";

/// The programs this mode needs, found at probe time.
#[derive(Debug, Clone)]
pub struct NetworkTools {
    /// `ip` (iproute2): creates, enters and deletes the namespace.
    ip: PathBuf,
    /// `pasta` (passt).
    pasta: PathBuf,
}

/// Whether this host can give sandboxes their own network: `pasta` and `ip` installed
/// and a root runner; else why not.
pub fn probe() -> Result<NetworkTools, String> {
    let ip = find(&["/usr/bin/ip", "/usr/sbin/ip", "/bin/ip", "/sbin/ip"])
        .ok_or("iproute2's ip is not installed")?;
    let pasta = find(&["/usr/bin/pasta", "/usr/local/bin/pasta"])
        .ok_or("pasta is not installed (Debian package passt)")?;
    if !nix::unistd::geteuid().is_root() {
        return Err(
            "pasta can attach to a sandbox's network namespace only for a root runner".into(),
        );
    }
    Ok(NetworkTools { ip, pasta })
}

fn find(candidates: &[&str]) -> Option<PathBuf> {
    candidates
        .iter()
        .map(Path::new)
        .find(|p| p.is_file())
        .map(Path::to_path_buf)
}

/// A network namespace with pasta attached; deleted on drop.
#[derive(Debug)]
pub struct PastaNetwork {
    /// `ip`, to delete the namespace.
    ip: PathBuf,
    /// The namespace's name under [`NETNS_DIR`].
    name: String,
}

impl PastaNetwork {
    /// Creates the namespace and starts pasta on it (pasta daemonizes once it is set up).
    pub fn start(tools: &NetworkTools) -> std::io::Result<PastaNetwork> {
        let name = format!("bench-{}", uuid::Uuid::new_v4().simple());
        run(Command::new(&tools.ip).args(["netns", "add", &name]))?;
        let network = PastaNetwork {
            ip: tools.ip.clone(),
            name,
        };
        run(Command::new(&tools.pasta)
            .args(["--runas", "0", "--quiet", "--config-net"])
            .args(["-t", "none", "-u", "none", "-T", "none", "-U", "none"])
            .arg("--no-map-gw")
            .arg("--netns")
            .arg(Path::new(NETNS_DIR).join(&network.name)))?;
        Ok(network)
    }

    /// The command-line prefix that runs a program inside the namespace.
    pub fn enter(&self) -> [std::ffi::OsString; 4] {
        [
            self.ip.clone().into_os_string(),
            "netns".into(),
            "exec".into(),
            self.name.clone().into(),
        ]
    }
}

impl Drop for PastaNetwork {
    fn drop(&mut self) {
        if let Err(e) = run(Command::new(&self.ip).args(["netns", "del", &self.name])) {
            tracing::warn!(namespace = %self.name, error = %e, "cannot delete a sandbox network namespace");
        }
    }
}

/// Runs a setup command to its end; its output is of no use (pasta, daemonized, would
/// hold a captured pipe open), its status decides.
fn run(command: &mut Command) -> std::io::Result<()> {
    let status = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "{:?} failed: {status}",
            command.get_program()
        )))
    }
}
