//! How the workloads open their raw sessions, and the requests they share.

use std::time::Duration;

use rzk_proto::{Acl, CreateOp, CreateRequest, Request};

use crate::error::BenchError;
use rzk_client::tls::TlsConfig;

use rzk_wirekit::raw::{new_session, AsyncClient, RawError};

/// The session timeout every raw session of the bench asks for.
const SESSION_TIMEOUT: Duration = Duration::from_secs(30);

/// A raw session with the first server of `hosts` (a connect string; a chroot is ignored).
pub(crate) async fn connect(hosts: &str) -> Result<AsyncClient, BenchError> {
    connect_over(hosts, None).await
}

/// [`connect`], over TLS when `tls` is given.
pub(crate) async fn connect_over(
    hosts: &str,
    tls: Option<&TlsConfig>,
) -> Result<AsyncClient, BenchError> {
    let addr = hosts.split(',').next().unwrap_or(hosts).split('/').next().unwrap_or(hosts);
    let session = new_session(SESSION_TIMEOUT);
    let opened = match tls {
        None => AsyncClient::open(addr).await,
        Some(tls) => AsyncClient::open_tls(addr, tls).await,
    };
    let connected = match opened {
        Ok(mut client) => client.handshake(&session).await.map(|_| client),
        Err(e) => Err(e),
    };
    match connected {
        Ok(client) => Ok(client),
        Err(e @ (RawError::Connect { .. } | RawError::Tls(_))) => Err(BenchError::Connect(e)),
        // A server that refuses a connection (ZooKeeper and rzk alike, at maxClientCnxns)
        // just closes it, which would otherwise surface as a bare "early eof".
        Err(e @ RawError::Handshake { .. }) => Err(BenchError::Refused { source: e }),
        Err(e) => Err(e.into()),
    }
}

/// A create of `path` with open ACLs; `flags` is the create mode (1 ephemeral, 2 sequential,
/// 3 both).
pub(crate) fn create(path: String, data: Vec<u8>, flags: i32) -> Request {
    Request::Create(CreateRequest {
        op: CreateOp::Create,
        path,
        data: Some(data),
        acl: Acl::open(),
        flags,
        ttl_ms: -1,
    })
}

/// Runs one request (set-up work); the server's error code, which set-up ignores where a node
/// may already exist.
pub(crate) async fn call(client: &mut AsyncClient, req: &Request) -> Result<i32, BenchError> {
    Ok(client.call(req, 1).await?.header.err)
}
