"""spark-submit entry point: maintain the views over everything logged since the last batch.

    spark-submit jobs/maintain.py --lake LAKE [--runtime local] [--partitions N] [--mode lazy|eager]
        [--hosts N]

The arguments, lines and exit codes of ``aspen maintain`` (``--follow``, ``--stop`` and
``--rebuild`` too): :mod:`aspen.pipeline.maintainer_main` runs the maintainer.

>>> build_parser().parse_args(["--lake", "/tmp/l", "--runtime", "spark"]).runtime
'spark'
"""

from __future__ import annotations

from aspen.pipeline.maintainer_main import build_parser, main
from aspen.spark.job import exit_process

__all__ = ["build_parser", "main"]

if __name__ == "__main__":  # exit_process: see aspen.spark.job
    exit_process(main())
