//! Shell settings: sockets and the limits that protect the server from its clients.

use std::net::SocketAddr;

/// Everything the shell needs to run a server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on; port 0 picks a free port.
    pub bind: SocketAddr,
    /// Protocol semantics.
    pub core: rzk_core::Config,
    /// Largest frame accepted from a client (`jute.maxbuffer`); larger ones close the
    /// connection.
    pub max_packet_bytes: usize,
    /// Connections per client IP (`maxClientCnxns`); 0 means unlimited.
    pub max_client_connections_per_ip: usize,
    /// Connections in total; further connections are refused.
    pub max_connections: usize,
    /// Requests read from one connection whose replies are not yet written. At the limit the
    /// server stops reading from that connection, so a client that stops reading replies
    /// cannot make the server buffer without bound.
    pub max_outstanding_requests_per_connection: usize,
    /// Bytes queued for one connection (replies and notifications). Past it the connection is
    /// closed: the client is not reading.
    pub max_queued_bytes_per_connection: usize,
}

impl ServerConfig {
    /// Defaults for a listen address, with ZooKeeper's defaults where it has them.
    pub fn new(bind: SocketAddr) -> ServerConfig {
        ServerConfig {
            bind,
            core: rzk_core::Config::default(),
            max_packet_bytes: rzk_proto::DEFAULT_MAX_PACKET_BYTES,
            max_client_connections_per_ip: 60,
            max_connections: 10_000,
            max_outstanding_requests_per_connection: 1_000,
            max_queued_bytes_per_connection: 64 * 1024 * 1024,
        }
    }
}
