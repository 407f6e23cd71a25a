"""spark-submit (or plain Python) entry point: the data-quality gate before publishing.

    spark-submit jobs/expectations.py --lake LAKE [--verbose]
    python jobs/expectations.py --lake LAKE

Runs ``aspen check``: every Great Expectations suite over the lake (delta-rs + pandas, no Spark
session is started), records the outcomes in ``expectation_results`` and exits 1, printing the
failed expectations, when one fails.
"""

from __future__ import annotations

import sys

from aspen.cli.main import main
from aspen.spark.job import exit_process

if __name__ == "__main__":  # exit_process: see aspen.spark.job
    exit_process(main(["check", *sys.argv[1:]]))
