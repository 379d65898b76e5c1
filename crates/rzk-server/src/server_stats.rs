//! [`ServerStats`]: what the shell measures and the core cannot (request latency, the log's
//! fsyncs and group-commit batches, snapshot writes), and [`Report`], the figures one `mntr`,
//! `srvr` or scrape shows, under ZooKeeper's names: `readlatency`, `updatelatency`,
//! `fsynctime`, `sync_processor_batch_size` (ZooKeeper's count of requests per log flush, which
//! is rzk's group-commit batch) and `snapshottime`, in milliseconds as ZooKeeper reports them.
//!
//! ZooKeeper's Prometheus provider exports these as summaries; prometheus-client has no summary
//! type, so `/metrics` serves histograms under the same names: `_sum` and `_count` mean the
//! same, and quantiles come from `histogram_quantile` over `_bucket` instead of a `quantile`
//! label. `mntr` shows the rows ZooKeeper 3.8's shows for each. Its whole-number rows (min,
//! max, sum, percentiles) are truncated to whole milliseconds, as ZooKeeper's millisecond
//! clock gives them; averages are exact, so a sub-millisecond server shows `0` beside an
//! average such as `0.132`.

use std::fmt;
use std::sync::Arc;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use rzk_core::four_letter::{Figure, ShellFigures};
use rzk_core::ConnId;

use crate::distribution::{upper_bound, Distribution, Snapshot, BUCKETS};
use crate::request_clock::{Latencies, LatencyShard, LATENCY_SHARDS};

/// The shell's measurements since the server started.
#[derive(Default)]
pub(crate) struct ServerStats {
    /// Each fdatasync of the transaction log.
    pub(crate) fsync_us: Distribution,
    /// Transactions made durable by one fsync.
    pub(crate) group_commit_txns: Distribution,
    /// Each snapshot, from the start of its walk to its seal.
    pub(crate) snapshot_ms: Distribution,
    /// The request latencies of every connection, live or closed, pooled by connection id.
    latencies: [Arc<LatencyShard>; LATENCY_SHARDS],
}

/// One report's figures.
pub(crate) struct Report {
    pub(crate) latencies: Latencies,
    pub(crate) fsync_us: Snapshot,
    pub(crate) group_commit_txns: Snapshot,
    pub(crate) snapshot_ms: Snapshot,
    /// Bytes taken from the core that wait for, or are on the way to, a client's socket.
    pub(crate) queued_bytes: u64,
}

impl ServerStats {
    /// The pool connection `conn` records its request latencies into.
    pub(crate) fn latency_pool(&self, conn: ConnId) -> Arc<LatencyShard> {
        self.latencies[conn as usize % LATENCY_SHARDS].clone()
    }

    /// The figures now, with the live connections' `queued_bytes`.
    pub(crate) fn report(&self, queued_bytes: u64) -> Report {
        let mut latencies = Latencies::default();
        for pool in &self.latencies {
            latencies.merge(&pool.figures());
        }
        Report {
            latencies,
            fsync_us: self.fsync_us.snapshot(),
            group_commit_txns: self.group_commit_txns.snapshot(),
            snapshot_ms: self.snapshot_ms.snapshot(),
            queued_bytes,
        }
    }
}

/// A report's distributions: ZooKeeper's name, the figures, what a unit recorded is in the
/// reported unit, and whether ZooKeeper shows percentiles for it.
type Named<'a> = (&'static str, &'a Snapshot, f64, bool);

/// Microseconds to the milliseconds ZooKeeper reports.
const MS_PER_US: f64 = 0.001;

impl Report {
    fn named(&self) -> [Named<'_>; 5] {
        [
            ("readlatency", &self.latencies.read_us, MS_PER_US, true),
            ("updatelatency", &self.latencies.update_us, MS_PER_US, true),
            ("fsynctime", &self.fsync_us, MS_PER_US, false),
            ("sync_processor_batch_size", &self.group_commit_txns, 1.0, false),
            ("snapshottime", &self.snapshot_ms, 1.0, false),
        ]
    }

    /// What the four-letter words show of it.
    pub(crate) fn shell_figures(&self) -> ShellFigures {
        let mut all = self.latencies.read_us.clone();
        all.merge(&self.latencies.update_us);
        let ms = |us: u64| us / 1000;
        let mut mntr_rows = Vec::new();
        for (name, s, scale, percentiles) in self.named() {
            let whole = |v: u64| Figure::Whole(((v as f64) * scale) as u64);
            let mut row = |stat: &str, value: Figure| {
                mntr_rows.push((format!("{stat}_{name}"), value));
            };
            row("avg", Figure::Mean(s.avg() * scale));
            row("min", whole(s.min));
            row("max", whole(s.max));
            row("cnt", Figure::Whole(s.count));
            row("sum", whole(s.sum));
            if percentiles {
                for (stat, q) in [("p50", 0.5), ("p95", 0.95), ("p99", 0.99), ("p999", 0.999)] {
                    row(stat, whole(s.quantile(q)));
                }
            }
        }
        ShellFigures { latency_ms: (ms(all.min), all.avg() * MS_PER_US, ms(all.max)), mntr_rows }
    }

    /// Adds the report's metrics to `registry`.
    pub(crate) fn register(self, registry: &mut Registry) {
        for (name, s, scale, _) in self.named() {
            let help = match name {
                "readlatency" => "Read request latency, ms",
                "updatelatency" => "Update request latency, until durable, ms",
                "fsynctime" => "Transaction log fdatasync time, ms",
                "sync_processor_batch_size" => "Transactions made durable by one fsync",
                _ => "Snapshot write time, ms",
            };
            registry.register(name, help, Histogram { snapshot: s.clone(), scale });
        }
        let queued: Gauge = Gauge::default();
        queued.set(i64::try_from(self.queued_bytes).unwrap_or(i64::MAX));
        registry.register(
            "rzk_output_queued_bytes",
            "Bytes of replies and events waiting for clients' sockets",
            queued,
        );
    }
}

/// A [`Snapshot`] served as a Prometheus histogram, values multiplied by `scale`.
#[derive(Debug)]
struct Histogram {
    snapshot: Snapshot,
    scale: f64,
}

impl EncodeMetric for Histogram {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), fmt::Error> {
        let s = &self.snapshot;
        let buckets: Vec<(f64, u64)> = (0..BUCKETS)
            .map(|i| {
                (upper_bound(i).map_or(f64::INFINITY, |b| b as f64 * self.scale), s.buckets[i])
            })
            .collect();
        encoder.encode_histogram::<NoLabelSet>(s.sum as f64 * self.scale, s.count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::request_clock::RequestClock;

    /// A request frame's head: an xid, then a getData.
    const GET: [u8; 8] = [0, 0, 0, 7, 0, 0, 0, 4];

    #[test]
    fn a_report_counts_every_connection_in_every_pool() {
        let stats = ServerStats::default();
        // Connections 1 and 17 share a pool; 2 has its own.
        let conns = [1, 17, 2];
        let clocks: Vec<_> = conns.map(|c| RequestClock::new(stats.latency_pool(c))).into();
        for clock in &clocks {
            // The connect request first, then two reads.
            let frames = [&[0u8; 44][..], &GET[..], &GET[..]];
            clock.arrived(Instant::now(), frames.into_iter());
            clock.answered(3);
        }
        // A closed connection's figures stay in its pool.
        drop(clocks);
        let report = stats.report(0);
        assert_eq!(report.latencies.read_us.count, 6);
        assert_eq!(report.latencies.update_us.count, 0);
    }
}
