"""The soak's arithmetic (aspen.bench.soak): percentiles, growth verdicts, the summary."""

from __future__ import annotations

from aspen.bench.soak import SoakResult, percentile, verdicts


def test_percentile_is_the_nearest_rank() -> None:
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 95) == 5.0
    assert percentile(values, 1) == 1.0
    assert percentile([], 50) is None


def test_growth_is_the_last_third_against_the_first() -> None:
    assert verdicts({"x": [10, 11, 10, 12, 11, 10]}) == {"x": "bounded"}
    assert verdicts({"x": [10, 11, 10, 14, 16, 19]}) == {"x": "grows"}  # 10.5 → 17.5
    assert verdicts({"x": [0, 0, 0, 1, 1, 1]}) == {"x": "grows"}  # near 0: against 1
    assert verdicts({"x": [0, 0, 0, 0, 0, 1]}) == {"x": "bounded"}
    assert verdicts({"x": [1, 2]}) == {"x": "too few samples"}


def test_the_summary_of_a_run() -> None:
    run = SoakResult(100, 240, 5.0, 1.0)
    run.samples = [{"at_s": float(i), "backlog": float(i % 2), "rss_mb": 900.0 + i}
                   for i in range(9)]
    run.batches = [{"at_s": float(i), "latency_s": float(i)} for i in range(1, 21)]
    summary = run.summary()
    assert summary["latency_p50_s"] == 10.0 and summary["latency_p95_s"] == 19.0
    assert summary["backlog_max"] == 1.0
    assert (summary["rss_mb_first"], summary["rss_mb_max"]) == (900.0, 908.0)
    assert summary["verdicts"] == {"backlog": "bounded", "rss_mb": "bounded",
                                   "latency_s": "grows"}
