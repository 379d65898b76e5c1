"""Summary statistics of the benchmark and profiling scripts."""

import statistics


def pct(xs, q):
    """The `q` quantile (0..1) of `xs` by rank, without interpolation: the value at index
    floor(q * n) of the sorted values (the largest for q = 1). `xs` must not be empty."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def median(xs):
    """The median of the values of `xs` that are not None (the mean of the middle two for an
    even count), or None when there are none."""
    vals = [x for x in xs if x is not None]
    return statistics.median(vals) if vals else None
