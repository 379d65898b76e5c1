//! The console's listener, bounded as rzk-server's HTTP listener is: at most
//! `max_connections` connections (one more is closed as soon as it is accepted), a client that
//! does not send its headers within `HTTP_HEADER_READ_TIMEOUT` is closed (slowloris), request
//! headers are held to `HTTP_REQUEST_BYTES_MAX`, and no connection outlives
//! `HTTP_CONNECTION_LIFETIME` (a live
//! page's event stream reconnects by itself). So no HTTP client holds more than a fixed share of
//! the console, however it behaves.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// How long a client may take to send a request's headers.
pub const HTTP_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Most bytes buffered for one request's headers (431 and a close beyond).
pub const HTTP_REQUEST_BYTES_MAX: usize = 16 * 1024;
/// Longest a connection lives, keep-alive and event streams included.
pub const HTTP_CONNECTION_LIFETIME: Duration = Duration::from_secs(300);

/// Accepts on `listener` and serves `app` until the task is aborted.
pub(crate) async fn serve(listener: TcpListener, max_connections: usize, app: Router) {
    let slots = Arc::new(Semaphore::new(max_connections.max(1)));
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            biased;
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let Ok(slot) = slots.clone().try_acquire_owned() else {
                        tracing::warn!(%peer, limit = max_connections,
                            "refusing a console connection: too many open");
                        continue;
                    };
                    let app = app.clone();
                    conns.spawn(async move {
                        connection(app, stream, peer).await;
                        drop(slot);
                    });
                }
                Err(e) => {
                    // Usually EMFILE: back off instead of spinning.
                    tracing::warn!("console accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
}

async fn connection(app: Router, stream: TcpStream, peer: SocketAddr) {
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HTTP_HEADER_READ_TIMEOUT)
        .max_buf_size(HTTP_REQUEST_BYTES_MAX)
        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(app));
    match tokio::time::timeout(HTTP_CONNECTION_LIFETIME, conn).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(%peer, "console connection closed: {e}"),
        Err(_) => tracing::debug!(%peer, "console connection closed at its lifetime"),
    }
}
