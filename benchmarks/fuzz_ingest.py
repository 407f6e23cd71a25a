"""Fuzz the update-record grammar for minutes: the properties of
``tests/properties/test_fuzz_records.py`` (:mod:`aspen.bench.fuzz`) with many more examples.

    .venv/bin/python benchmarks/fuzz_ingest.py --minutes 10 --seed 1
    .venv/bin/python benchmarks/fuzz_ingest.py --examples 5000 --ingest 0

Three phases: (1) fuzzed files through validation — each line the outcome it was drawn with,
nothing lost or doubled, reasons documented and clipped, accepted records inside the bounds and
stable when written back — and every ``--maintain-every``-th example's accepted records through
the in-process path of ingest → apply → maintain (hypothesis, ``--chunk`` examples per run, a
fresh seed per run, until ``--examples`` or ``--minutes``); (2) ``--ingest`` examples of a few
files each through ``ingest_files`` on a temporary lake (delta-rs, no JVM), ingested twice. A
failing example is shrunk, printed and counted, and the run goes on. Prints examples run, records
accepted, quarantined by reason and blank, and the failures found; exit code 1 if any.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from aspen.bench.fuzz import (
    FileOutcome,
    FuzzFile,
    check_ingest,
    check_validation,
    files,
    record_lines,
)

ROOT = Path(__file__).resolve().parents[1]
QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example,
         HealthCheck.filter_too_much]


@dataclass
class Tally:
    """What the run saw."""

    examples: int = 0
    files: int = 0
    lines: int = 0
    accepted: int = 0
    blank: int = 0
    quarantined: Counter[str] = field(default_factory=Counter)
    maintained: int = 0
    ingest_examples: int = 0
    ingested_files: int = 0
    failures: list[str] = field(default_factory=list)

    def add(self, fuzzed: list[FuzzFile], outcomes: list[FileOutcome]) -> None:
        """Count one example's files and their outcomes."""
        self.files += len(fuzzed)
        self.lines += sum(len(f.expected()) for f in fuzzed)
        for outcome in outcomes:
            self.accepted += outcome.accepted
            self.blank += outcome.blank
            self.quarantined.update(outcome.quarantined)


def _maintainer() -> Callable[[list[str]], Any]:
    """The tests' in-process ingest → apply → maintain (the JVM-free path, reused)."""
    sys.path.insert(0, str(ROOT / "tests" / "properties"))
    from test_accepted_records_maintain import maintain_in_process

    return maintain_in_process


def _failure(err: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(err), err)).strip()
    return text if len(text) <= 2000 else text[:2000] + f"… ({len(text)} characters)"


def validation_phase(tally: Tally, args: argparse.Namespace) -> None:
    """Chunks of hypothesis runs until the example or time budget is spent."""
    maintain = _maintainer() if args.maintain_every else None
    deadline = time.monotonic() + 60 * args.minutes if args.minutes else None
    run = 0
    while True:
        left = args.examples - tally.examples if args.examples else args.chunk
        if left <= 0 or (deadline is not None and time.monotonic() >= deadline):
            return

        @seed(args.seed * 100_003 + run)
        @settings(max_examples=min(args.chunk, left), deadline=None, database=None,
                  suppress_health_check=QUIET, print_blob=False)
        @given(st.lists(files(), min_size=1, max_size=3))
        def example(fuzzed: list[FuzzFile]) -> None:
            outcomes = [check_validation(fuzz) for fuzz in fuzzed]
            tally.examples += 1
            tally.add(fuzzed, outcomes)
            if maintain is not None and tally.examples % args.maintain_every == 0:
                lines = [line for outcome in outcomes
                         for line in record_lines(r for _, r in outcome.validation.records)]
                if lines:
                    maintain(lines)
                    tally.maintained += 1

        try:
            example()
        except Exception as err:  # noqa: BLE001 - a found failure: count it, go on
            tally.failures.append(_failure(err))
            print(f"FAILURE in run {run}:\n{tally.failures[-1]}", flush=True)
        run += 1
        print(f"  {tally.examples} examples, {tally.accepted} accepted, "
              f"{sum(tally.quarantined.values())} quarantined", flush=True)


def ingest_phase(tally: Tally, args: argparse.Namespace) -> None:
    """``--ingest`` examples through ``ingest_files`` on temporary lakes (delta-rs, no JVM)."""
    from aspen.settings import Settings

    @seed(args.seed)
    @settings(max_examples=args.ingest, deadline=None, database=None,
              suppress_health_check=QUIET, phases=[Phase.explicit, Phase.generate],
              print_blob=False)
    @given(st.lists(files(max_lines=8), min_size=2, max_size=3))
    def example(fuzzed: list[FuzzFile]) -> None:
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            outcomes = check_ingest(Settings(lake=str(root / "lake")), root, fuzzed)
        tally.ingest_examples += 1
        tally.ingested_files += len(fuzzed)
        tally.add(fuzzed, list(outcomes.values()))
        print(f"  ingest example {tally.ingest_examples}: {len(fuzzed)} file(s)", flush=True)

    try:
        example()
    except Exception as err:  # noqa: BLE001 - a found failure: count it
        tally.failures.append(_failure(err))
        print(f"FAILURE in ingest:\n{tally.failures[-1]}", flush=True)


def main() -> int:
    """Parse the arguments, run the phases, print the figures; 1 when a failure was found."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--examples", type=int, default=None,
                        help="validation examples to run (default: 2000 unless --minutes)")
    budget.add_argument("--minutes", type=float, default=None,
                        help="run validation examples for this long instead")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunk", type=int, default=200, help="examples per hypothesis run")
    parser.add_argument("--maintain-every", type=int, default=25, metavar="K",
                        help="maintain the accepted records of every K-th example (0: never)")
    parser.add_argument("--ingest", type=int, default=5, metavar="N",
                        help="examples through ingest_files on a lake (delta-rs; 0: none)")
    args = parser.parse_args()
    if args.examples is None and args.minutes is None:
        args.examples = 2000
    tally = Tally()
    started = time.monotonic()
    validation_phase(tally, args)
    validated = time.monotonic() - started
    if args.ingest:
        ingest_phase(tally, args)
    elapsed = time.monotonic() - started
    print(f"\nvalidation: {tally.examples} examples in {validated:.0f} s "
          f"({tally.examples / max(validated, 1e-9):.1f}/s); {tally.maintained} maintained "
          f"in process; ingest: {tally.ingest_examples} examples, {tally.ingested_files} files; "
          f"{elapsed:.0f} s in all")
    print(f"{tally.files} files, {tally.lines} lines: {tally.accepted} accepted, "
          f"{sum(tally.quarantined.values())} quarantined, {tally.blank} blank")
    for code, count in sorted(tally.quarantined.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {code:<24} {count:>7}")
    print(f"failures found: {len(tally.failures)}")
    for failure in tally.failures:
        print("  " + failure.replace("\n", "\n  "))
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
