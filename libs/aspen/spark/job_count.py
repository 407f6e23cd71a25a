"""How many Spark jobs an application has started: what the batch metrics count per phase.

Spark numbers its jobs 0, 1, 2, … across the application, and its status tracker keeps the most
recent ones (``spark.ui.retainedJobs``; the tracker works with the UI off). The highest job id
it lists, plus one, is how many jobs have started; the difference of two readings is how many
ran in between, counted by Spark itself rather than by a model of what a phase should run. The
tracker lists jobs outside any job group; Aspen sets none (a job in a group, if the last one
started, is counted by the next reading).

>>> jobs_between(JobReading(17), JobReading(42))
25
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ["JobReading", "jobs_between", "read_jobs"]


@dataclass(frozen=True)
class JobReading:
    """How many jobs the application had started when read."""

    started: int


def read_jobs(spark: SparkSession) -> JobReading:
    """Read how many jobs ``spark``'s application has started so far.

    >>> before = read_jobs(spark); spark.range(3).count()  # doctest: +SKIP
    3
    >>> jobs_between(before, read_jobs(spark))  # doctest: +SKIP
    1
    """
    ids = spark.sparkContext.statusTracker().getJobIdsForGroup(None)
    return JobReading(max(ids) + 1 if ids else 0)


def jobs_between(before: JobReading, after: JobReading) -> int:
    """Jobs started between two readings of one application."""
    return after.started - before.started
