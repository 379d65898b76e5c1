//! Recorded values (durations, batch sizes) for the metrics: count, sum, min, max and
//! power-of-two buckets, from which `mntr` takes ZooKeeper's avg/min/max/cnt/sum and
//! percentiles and `/metrics` a histogram.
//!
//! [`Distribution`] is shared and lock-free, for one recording thread and concurrent readers:
//! a reader sees each field as of a slightly different moment, and the fields agree once
//! recording stops, which is all a scrape needs. [`Snapshot`] is the plain form, recorded into
//! by one owner (a connection's requests) and merged for a report. Buckets make percentiles
//! estimates: a reported percentile is the upper bound of its bucket, at most twice the truth.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bucket `i` holds the values in `(2^(i-1), 2^i]` (bucket 0 holds 0 and 1); the last one
/// holds everything above `2^(BUCKETS-2)`. 2^26 of microseconds is 67 s.
pub const BUCKETS: usize = 28;

/// Values recorded since the start; see the module documentation.
pub struct Distribution {
    count: AtomicU64,
    sum: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
    buckets: [AtomicU64; BUCKETS],
}

impl Default for Distribution {
    fn default() -> Self {
        Distribution {
            count: AtomicU64::new(0),
            sum: AtomicU64::new(0),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// Values recorded by one owner, or a [`Distribution`] as read at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub count: u64,
    pub sum: u64,
    /// 0 while nothing is recorded, as ZooKeeper reports it.
    pub min: u64,
    pub max: u64,
    /// Values per bucket, not cumulative.
    pub buckets: [u64; BUCKETS],
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot { count: 0, sum: 0, min: 0, max: 0, buckets: [0; BUCKETS] }
    }
}

impl Distribution {
    pub fn record(&self, value: u64) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(value, Ordering::Relaxed);
        self.min.fetch_min(value, Ordering::Relaxed);
        self.max.fetch_max(value, Ordering::Relaxed);
        self.buckets[bucket_of(value)].fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> Snapshot {
        let min = self.min.load(Ordering::Relaxed);
        Snapshot {
            count: self.count.load(Ordering::Relaxed),
            sum: self.sum.load(Ordering::Relaxed),
            min: if min == u64::MAX { 0 } else { min },
            max: self.max.load(Ordering::Relaxed),
            buckets: std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed)),
        }
    }
}

fn bucket_of(value: u64) -> usize {
    let bits = (u64::BITS - value.saturating_sub(1).leading_zeros()) as usize;
    bits.min(BUCKETS - 1)
}

/// The largest value bucket `i` holds; `None` for the last, unbounded one.
pub fn upper_bound(i: usize) -> Option<u64> {
    (i < BUCKETS - 1).then(|| 1u64 << i)
}

impl Snapshot {
    pub fn record(&mut self, value: u64) {
        self.min = if self.count == 0 { value } else { self.min.min(value) };
        self.max = self.max.max(value);
        self.count += 1;
        self.sum = self.sum.saturating_add(value);
        self.buckets[bucket_of(value)] += 1;
    }

    /// Adds `other`'s values to these.
    pub fn merge(&mut self, other: &Snapshot) {
        if other.count == 0 {
            return;
        }
        self.min = if self.count == 0 { other.min } else { self.min.min(other.min) };
        self.max = self.max.max(other.max);
        self.count += other.count;
        self.sum = self.sum.saturating_add(other.sum);
        for (b, o) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *b += o;
        }
    }

    pub fn avg(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The upper bound of the bucket holding the `q`-quantile (0 < q <= 1), capped at the
    /// maximum seen; 0 while nothing is recorded.
    pub fn quantile(&self, q: f64) -> u64 {
        let rank = (q * self.count as f64).ceil() as u64;
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank.max(1) {
                return upper_bound(i).map_or(self.max, |b| b.min(self.max));
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_powers_of_two() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(1), 0);
        assert_eq!(bucket_of(2), 1);
        assert_eq!(bucket_of(3), 2);
        assert_eq!(bucket_of(4), 2);
        assert_eq!(bucket_of(5), 3);
        assert_eq!(bucket_of(1 << 20), 20);
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
        for v in [0u64, 1, 2, 3, 7, 8, 9, 1000, 1 << 25] {
            assert!(upper_bound(bucket_of(v)).is_none_or(|b| v <= b), "{v}");
        }
    }

    #[test]
    fn summary_and_quantiles() {
        let d = Distribution::default();
        assert_eq!(d.snapshot().min, 0);
        assert_eq!(d.snapshot().quantile(0.5), 0);
        for v in 1..=100u64 {
            d.record(v);
        }
        let s = d.snapshot();
        assert_eq!((s.count, s.sum, s.min, s.max), (100, 5050, 1, 100));
        assert_eq!(s.avg(), 50.5);
        // 50 is in (32, 64]; 99 and 100 in (64, 128], capped at the max.
        assert_eq!(s.quantile(0.5), 64);
        assert_eq!(s.quantile(0.99), 100);
        assert_eq!(s.buckets.iter().sum::<u64>(), 100);
    }

    #[test]
    fn plain_records_and_merges_agree_with_shared() {
        let (shared, mut a, mut b) =
            (Distribution::default(), Snapshot::default(), Snapshot::default());
        for v in [5u64, 900, 3, 70_000] {
            shared.record(v);
            a.record(v);
        }
        for v in [1u64, 2_000_000] {
            shared.record(v);
            b.record(v);
        }
        let mut merged = Snapshot::default();
        merged.merge(&Snapshot::default());
        merged.merge(&a);
        merged.merge(&b);
        assert_eq!(merged, shared.snapshot());
        assert_eq!((merged.min, merged.max, merged.count), (1, 2_000_000, 6));
    }
}
