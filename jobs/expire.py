"""spark-submit entry point: the TTL sweep — expired instances become deletions.

    spark-submit jobs/expire.py --lake LAKE [--now ISO]
"""

from __future__ import annotations

import sys

from aspen.cli.main import main
from aspen.spark.job import exit_process

if __name__ == "__main__":  # exit_process: see aspen.spark.job
    exit_process(main(["expire", *sys.argv[1:]]))
