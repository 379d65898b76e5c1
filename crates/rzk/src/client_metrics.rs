//! `--metrics-port` of the supervising commands (`rzk elect`, `rzk lock`): a Prometheus
//! recorder for the recipes' `rzk_recipes_*` metrics and the supervisor's own, served at
//! `GET /metrics` through the server's bounded HTTP listener.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use clap::Args;
use metrics::{gauge, histogram};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tokio::net::TcpListener;

use crate::error::CliError;

/// 1 while the supervised command runs, 0 otherwise.
pub(crate) const CHILD_RUNNING: &str = "rzk_cli_child_running";
/// From the term's loss signal to the command's process group stopped and reaped.
pub(crate) const LOSS_TO_CHILD_STOPPED: &str = "rzk_cli_loss_to_child_stopped_seconds";

/// The Prometheus text format's content type, version 0.0.4.
const CONTENT_TYPE_PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";
/// Histogram buckets, in seconds, for term durations (up to hours) and stop times (down to a
/// millisecond).
const BUCKETS_SECONDS: &[f64] =
    &[0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0, 600.0, 3600.0];
/// How often the recorder's upkeep runs (it bounds the histograms' buffered samples).
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// The metrics endpoint flags.
#[derive(Debug, Args)]
pub(crate) struct MetricsFlags {
    /// Serve Prometheus metrics (leadership or hold state, terms, loss reasons, stop times)
    /// at http://BIND:PORT/metrics; 0 picks a free port (printed at start).
    #[arg(long)]
    metrics_port: Option<u16>,
    /// The address the metrics endpoint listens on.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    metrics_bind: IpAddr,
}

/// Installs the recorder and starts the endpoint if `--metrics-port` was given; returns the
/// address it listens on. The endpoint lives until the process exits.
pub(crate) async fn start(f: &MetricsFlags) -> Result<Option<SocketAddr>, CliError> {
    let Some(port) = f.metrics_port else { return Ok(None) };
    let listener = TcpListener::bind((f.metrics_bind, port)).await.map_err(|e| {
        CliError::usage(format!("cannot listen for metrics on {}:{port}: {e}", f.metrics_bind))
    })?;
    let addr = listener
        .local_addr()
        .map_err(|e| CliError::runtime(format!("metrics listener address: {e}")))?;
    let handle = PrometheusBuilder::new()
        .set_buckets(BUCKETS_SECONDS)
        .and_then(PrometheusBuilder::install_recorder)
        .map_err(|e| CliError::runtime(format!("installing the metrics recorder: {e}")))?;
    tokio::spawn(upkeep(handle.clone()));
    tokio::spawn(rzk_server::serve_text(
        "metrics",
        listener,
        "/metrics",
        CONTENT_TYPE_PROMETHEUS,
        move || handle.render(),
    ));
    gauge!(CHILD_RUNNING).set(0.0);
    Ok(Some(addr))
}

async fn upkeep(handle: PrometheusHandle) {
    let mut tick = tokio::time::interval(UPKEEP_INTERVAL);
    loop {
        tick.tick().await;
        handle.run_upkeep();
    }
}

/// Holds [`CHILD_RUNNING`] at 1 while it lives.
pub(crate) struct ChildRunning(());

impl ChildRunning {
    pub(crate) fn new() -> ChildRunning {
        gauge!(CHILD_RUNNING).set(1.0);
        ChildRunning(())
    }
}

impl Drop for ChildRunning {
    fn drop(&mut self) {
        gauge!(CHILD_RUNNING).set(0.0);
    }
}

/// The command was stopped (and reaped) `took` after the loss signal.
pub(crate) fn child_stopped_after_loss(took: Duration) {
    histogram!(LOSS_TO_CHILD_STOPPED).record(took.as_secs_f64());
}
