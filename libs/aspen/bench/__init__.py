"""``aspen bench``: the benchmark suite (paper experiments, variable order, peers,
scale ladder), each experiment in its own subprocess with a time cut-off; results as JSON, CSV,
PNG plots and a Markdown summary. Entry point: :func:`aspen.bench.run.run_bench`.
"""

from __future__ import annotations

__all__ = ["common", "order", "paper", "peers", "ladder", "report", "run", "worker"]
