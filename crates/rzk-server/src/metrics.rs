//! The Prometheus endpoint: `GET /metrics` on a listener of its own, in the OpenMetrics text
//! format, under the names ZooKeeper's `PrometheusMetricsProvider` uses where they mean the
//! same (`znode_count`, `watch_count`, ...) and `rzk_` names for rzk's own.
//!
//! A scrape reads the counts the core keeps for `mntr` under one short hold of the core's
//! lock; nothing is added to the request path. HTTP and its limits are `http_listener`'s.

use std::sync::Arc;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use rzk_core::four_letter::Gauges;
use tokio::net::TcpListener;

use crate::http_listener;
use crate::shared::Inner;

/// The OpenMetrics content type, which Prometheus negotiates and parses.
const CONTENT_TYPE_OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Accepts scrapes until the task is aborted (when the server shuts down).
pub(crate) async fn serve(inner: Arc<Inner>, listener: TcpListener) {
    let render = move || exposition(&inner);
    http_listener::serve_text("metrics", listener, "/metrics", CONTENT_TYPE_OPENMETRICS, render)
        .await;
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
        (
            "rzk_sasl_auth_failures",
            "SASL exchanges that failed (each closed its connection)",
            counters.sasl_failures,
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
