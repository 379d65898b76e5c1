//! Latency samples and the one percentile rule of every benchmark report, the demo and the
//! tests that report times.

use std::time::Duration;

/// What one session of a workload measured.
#[derive(Debug, Default)]
pub struct Samples {
    /// One latency per operation, microseconds.
    pub latencies_us: Vec<u32>,
    /// Operations the server answered with an error.
    pub errors: u64,
}

impl Samples {
    /// Records one operation's latency.
    pub fn push(&mut self, latency: Duration) {
        self.latencies_us.push(micros(latency));
    }
}

/// `d` in whole microseconds, saturating at `u32::MAX` (over an hour).
pub fn micros(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX)
}

/// The `p`-quantile (`p` from 0.0 to 1.0) of `sorted`, which must be in ascending order: the
/// element at rank `round((len - 1) * p)`, so that 0.5 is the median, 1.0 the maximum, and
/// every result is a value that was measured. `T::default()` (zero) when `sorted` is empty.
pub fn percentile<T: Copy + Default>(sorted: &[T], p: f64) -> T {
    let Some(last) = sorted.len().checked_sub(1) else { return T::default() };
    let rank = (last as f64 * p.clamp(0.0, 1.0)).round() as usize;
    sorted[rank.min(last)]
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn ranks_round_to_the_nearest_sample() {
        let v: Vec<u32> = (1..=10).collect();
        assert_eq!(percentile(&v, 0.0), 1);
        assert_eq!(percentile(&v, 0.5), 6); // rank 4.5 rounds to 5
        assert_eq!(percentile(&v, 0.99), 10);
        assert_eq!(percentile(&v, 1.0), 10);
        assert_eq!(percentile(&[7u64], 0.999), 7);
    }

    #[test]
    fn empty_is_zero() {
        assert_eq!(percentile::<u32>(&[], 0.5), 0);
        assert_eq!(percentile::<std::time::Duration>(&[], 1.0), std::time::Duration::ZERO);
    }
}
