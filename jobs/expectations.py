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

if __name__ == "__main__":
    sys.exit(main(["check", *sys.argv[1:]]))
