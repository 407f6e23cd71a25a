"""spark-submit entry point: maintain the views over everything logged since the last batch.

    spark-submit jobs/maintain.py --lake LAKE [--runtime local] [--partitions N] [--mode lazy|eager]
        [--hosts N]
"""

from __future__ import annotations

import sys

from aspen.cli.main import main
from aspen.spark.job import exit_process

if __name__ == "__main__":  # exit_process: see aspen.spark.job
    exit_process(main(["maintain", *sys.argv[1:]]))
