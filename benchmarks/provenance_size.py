"""Provenance size and decoding on a lake the pipeline wrote (stored variable order).

    .venv/bin/python benchmarks/provenance_size.py --lake PATH [--out FILE.json] [--no-sift]

Reads the lake only (copy it first if others write to it). Prints one line per view — rows
with provenance, bytes (total, max and median per row), BDD nodes per row as stored (sum, max)
and after one sifting pass — then the decode, what-if and explain timings; ``--out`` writes the
whole result as JSON. What is measured: :mod:`aspen.bench.provenance_size`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from aspen.bench.provenance_size import provenance_size, table_lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lake", required=True, help="the lake root (path or URI)")
    parser.add_argument("--out", type=Path, default=None, help="write the result as JSON here")
    parser.add_argument("--no-sift", action="store_true", help="skip the sifting pass")
    args = parser.parse_args(argv)
    result = provenance_size(args.lake, sift=not args.no_sift,
                             say=lambda line: print(f"... {line}", file=sys.stderr, flush=True))
    for line in table_lines(result):
        print(line)
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
