//! Free TCP ports on 127.0.0.1, for servers that must be told their port before they bind it.
//! Another process can take such a port first; `zookeeper::assert_served_by` catches that.

use std::net::{Ipv4Addr, TcpListener};

/// A port that was free on 127.0.0.1 a moment ago.
pub fn free_port() -> u16 {
    free_ports(1)[0]
}

/// `n` distinct ports that were free on 127.0.0.1 a moment ago.
pub fn free_ports(n: usize) -> Vec<u16> {
    // Every listener is held until all are chosen, so that the ports are distinct.
    let listeners: Vec<TcpListener> =
        (0..n).map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind")).collect();
    listeners.iter().map(|l| l.local_addr().expect("addr").port()).collect()
}
