"""Timing shared by the benchmarks: a scripts' peers are measured the same way."""
import statistics
import time


def median_ms(fn, runs=7):
    """Median wall time of `fn` in ms over `runs` calls, after one call that warms the page cache and footers
    alike for every peer."""
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)
