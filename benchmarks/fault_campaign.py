"""The fault campaign: ingest, apply, maintain and the TTL sweep killed (``kill -9``) or crashed at
named points, rerun, and the lake checked — views against from-scratch evaluation, every input
record in the log exactly once, the ledger consistent — then the corrupted-input cases; see
:mod:`aspen.bench.faults`.

    .venv/bin/python benchmarks/fault_campaign.py --trials 30 --seed 1 --out results/faults
    .venv/bin/python benchmarks/fault_campaign.py --trials 4 --runtimes local --no-corrupted

Prints a line per trial, then the table; writes ``trials.csv``, ``corrupted.csv`` and
``report.md`` into ``--out`` (the lake, the update files and each command's output under
``--out`` too). Exit code 1 when a trial lost, doubled or mismatched anything, a rerun failed or a
corrupted-input case went otherwise than expected.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import sys
import time
from dataclasses import asdict
from pathlib import Path

from aspen.bench.faults import (
    Campaign,
    markdown_report,
    plan_trials,
    subprocess_env,
    write_csv,
)


def _spark_conf_dir(out: Path) -> str:
    """A ``spark-defaults.conf`` for the short-lived ``aspen`` processes (the tiny-data conf, a
    C1-only JVM), as the tests give their ``spark-submit`` jobs."""
    from aspen.spark.session import SHORT_JOB_CONF

    folder = out / "spark-conf"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "spark-defaults.conf").write_text(
        "".join(f"{key} {value}\n" for key, value in SHORT_JOB_CONF.items()))
    return str(folder)


def main(argv: list[str] | None = None) -> int:
    """Run the campaign; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("results/faults"))
    parser.add_argument("--runtimes", default="local,spark",
                        help="maintain runtimes to fault: local, spark or local,spark")
    parser.add_argument("--subprocess-reruns", action="store_true",
                        help="rerun each faulted command as a process of its own too (slower; "
                             "by default the rerun runs in this process's warm session)")
    parser.add_argument("--no-corrupted", action="store_true",
                        help="skip the corrupted-input cases")
    args = parser.parse_args(argv)
    runtimes = [r.strip() for r in args.runtimes.split(",") if r.strip()]
    if not runtimes or set(runtimes) - {"local", "spark"}:
        parser.error(f"--runtimes: local, spark or both, not {args.runtimes!r}")

    import os

    from aspen.spark.session import TEST_CONF, get_spark

    out: Path = args.out
    for folder in ("lake", "inputs", "logs"):  # this script's own folders of an earlier run
        shutil.rmtree(out / folder, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    conf_dir = os.environ.get("SPARK_CONF_DIR") or _spark_conf_dir(out)
    started = time.monotonic()
    spark = get_spark("aspen-fault-campaign", extra_conf=TEST_CONF)
    campaign = Campaign(out, spark, seed=args.seed, env=subprocess_env(conf_dir),
                        subprocess_reruns=args.subprocess_reruns,
                        emit=lambda line: print(line, flush=True))
    campaign.setup()
    print(f"lake set up in {time.monotonic() - started:.0f} s; {args.trials} trials "
          f"(seed {args.seed}, runtimes {','.join(runtimes)})", flush=True)
    for number, planned in enumerate(plan_trials(args.trials, args.seed, runtimes), start=1):
        campaign.trial(number, planned)
    final = campaign.finish()
    trials_done = time.monotonic()
    corruption = [] if args.no_corrupted else campaign.corrupted_inputs(as_processes=True)
    ended = time.monotonic()

    rows = campaign.results
    header = (f"{len(rows)} trials, seed {args.seed}, runtimes {','.join(runtimes)}: "
              f"{trials_done - started:.0f} s for the set-up, the trials and the final maintain"
              + ("" if args.no_corrupted else
                 f", {ended - trials_done:.0f} s for the corrupted inputs") + ".\n")
    report = markdown_report(rows, final, corruption, header=header)
    print()
    print(report)
    write_csv(rows, out / "trials.csv")
    if corruption:
        with (out / "corrupted.csv").open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=["case", "outcome", "ok"])
            writer.writeheader()
            writer.writerows(asdict(case) for case in corruption)
    (out / "report.md").write_text(report + "\n")
    spark.stop()
    bad = [r for r in [*rows, final] if r.lost or r.doubled or r.mismatches or not r.rerun_ok
           or not r.ledger_ok]
    return 1 if bad or not all(case.ok for case in corruption) else 0


if __name__ == "__main__":
    sys.exit(main())
