//! Free loopback ports.
//!
//! Binding port 0 asks the kernel for an unused port; the listener is closed again so a
//! server can take the port. Between the two, another process may grab it: the servers
//! of this harness detect that ("address already in use") and start again on new ports.

use std::collections::HashSet;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::{Mutex, OnceLock, PoisonError};

/// Ports already handed out by this process, so two servers of one test binary never
/// get the same port even if the kernel offers it twice.
fn handed_out() -> &'static Mutex<HashSet<u16>> {
    static PORTS: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();
    PORTS.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Returns a TCP port on 127.0.0.1 that nothing listens on right now and that this
/// process has not returned before.
///
/// # Panics
///
/// If the kernel refuses to bind a loopback socket (no loopback interface).
pub fn free_port() -> u16 {
    let mut ports = handed_out().lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .expect("bind 127.0.0.1:0 to find a free port");
        let port = listener
            .local_addr()
            .expect("local address of a bound listener")
            .port();
        if ports.insert(port) {
            return port;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_never_handed_out_twice() {
        let ports: Vec<u16> = (0..64).map(|_| free_port()).collect();
        let distinct: HashSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len());
        assert!(!distinct.contains(&0));
    }
}
