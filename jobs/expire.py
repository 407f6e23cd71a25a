"""spark-submit entry point: the TTL sweep — expired instances become deletions.

    spark-submit jobs/expire.py --lake LAKE [--now ISO]
"""

from __future__ import annotations

import sys

from aspen.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["expire", *sys.argv[1:]]))
