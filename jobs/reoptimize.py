"""spark-submit entry point: re-optimize the continuous queries incrementally and adopt changed
plans (the ``aspen_reoptimize`` DAG's job).

    spark-submit jobs/reoptimize.py --lake LAKE [NAME ...] [--method declarative|top-down|...]
"""

from __future__ import annotations

import sys

from aspen.cli.main import main
from aspen.spark.job import exit_process

if __name__ == "__main__":  # exit_process: see aspen.spark.job
    exit_process(main(["query", "reoptimize", *sys.argv[1:]]))
