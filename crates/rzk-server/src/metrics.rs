//! The Prometheus endpoint: `GET /metrics` on a listener of its own, in the OpenMetrics text
//! format, under the names ZooKeeper's `PrometheusMetricsProvider` uses where they mean the
//! same (`znode_count`, `watch_count`, ...) and `rzk_` names for rzk's own.
//!
//! A scrape reads the counts the core keeps for `mntr` under one short hold of the core's
//! lock; nothing is added to the request path. HTTP is hyper's; every connection is bounded
//! in number, header size, time to send its headers (slowloris) and lifetime.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use rzk_core::four_letter::Gauges;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::shared::Inner;

/// Most HTTP connections served at once; more are closed as soon as they are accepted.
pub const METRICS_CONNECTIONS_MAX: usize = 16;
/// How long a client may take to send a request's headers (slowloris bound).
pub const METRICS_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Most bytes buffered for one request's headers (hyper's smallest allowed buffer).
pub const METRICS_REQUEST_BYTES_MAX: usize = 8 * 1024;
/// Longest an HTTP connection lives, keep-alive included.
pub const METRICS_CONNECTION_LIFETIME: Duration = Duration::from_secs(60);

/// The OpenMetrics content type, which Prometheus negotiates and parses.
const CONTENT_TYPE_OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Accepts scrapes until the task is aborted (when the server shuts down).
pub(crate) async fn serve(inner: Arc<Inner>, listener: TcpListener) {
    let slots = Arc::new(Semaphore::new(METRICS_CONNECTIONS_MAX));
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let Ok(slot) = slots.clone().try_acquire_owned() else {
                        tracing::warn!(%peer, limit = METRICS_CONNECTIONS_MAX,
                            "refusing metrics connection: too many open");
                        continue;
                    };
                    let inner = inner.clone();
                    conns.spawn(async move {
                        connection(inner, stream, peer).await;
                        drop(slot);
                    });
                }
                Err(e) => {
                    tracing::warn!("metrics accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

async fn connection(inner: Arc<Inner>, stream: TcpStream, peer: SocketAddr) {
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let response = respond(&inner, &req);
        async move { Ok::<_, Infallible>(response) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(METRICS_HEADER_READ_TIMEOUT)
        .max_buf_size(METRICS_REQUEST_BYTES_MAX)
        .serve_connection(TokioIo::new(stream), service);
    match tokio::time::timeout(METRICS_CONNECTION_LIFETIME, conn).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(%peer, "metrics connection closed: {e}"),
        Err(_) => tracing::debug!(%peer, "metrics connection closed at its lifetime"),
    }
}

fn respond(inner: &Inner, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, body: String| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        r
    };
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return reply(StatusCode::METHOD_NOT_ALLOWED, "only GET\n".into());
    }
    if req.uri().path() != "/metrics" {
        return reply(StatusCode::NOT_FOUND, "rzk serves /metrics\n".into());
    }
    let mut r = reply(StatusCode::OK, exposition(inner));
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE_OPENMETRICS));
    r
}

/// The metrics in the OpenMetrics text format.
fn exposition(inner: &Inner) -> String {
    let (gauges, counters) = {
        let sh = inner.lock();
        (Gauges::of(&sh.core, inner.now()), sh.core.counters().clone())
    };
    let mut registry = Registry::default();
    inner.stats_report().register(&mut registry);
    for (name, value) in gauges.named() {
        let gauge: Gauge = Gauge::default();
        gauge.set(i64::try_from(value).unwrap_or(i64::MAX));
        registry.register(name, name, gauge);
    }
    let own = [
        ("rzk_sessions_expired", "Sessions the server expired", counters.sessions_expired),
        (
            "rzk_protocol_errors",
            "Connections closed for a protocol violation",
            counters.protocol_errors,
        ),
    ];
    for (name, help, value) in own {
        let counter: Counter = Counter::default();
        counter.inc_by(value);
        registry.register(name, help, counter);
    }
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = encode(&mut out, &registry);
    out
}
