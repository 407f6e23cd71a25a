"""What each phase of a batch costs: wall seconds by the clock, Spark jobs by Spark's count.

Spark numbers its jobs 0, 1, 2, … across the application, and its status tracker keeps the most
recent ones (``spark.ui.retainedJobs``; the tracker works with the UI off). The highest job id
it lists, plus one, is how many jobs have started (:func:`jobs_started`); the difference of two
readings is how many ran in between, counted by Spark itself rather than by a model of what a
phase should run. The tracker lists jobs outside any job group; Aspen sets none (a job in a
group, if the last one started, is counted by the next reading).

A :class:`PhaseMeter` reads the clock and the job count once at each end of a phase:

>>> started = iter([0, 7, 7, 9])  # the job counts the meter reads, in order
>>> meter = PhaseMeter(lambda: next(started))
>>> with meter.phase("apply"):
...     pass
>>> with meter.phase("write"):
...     pass
>>> dict(meter.jobs)
{'apply': 7, 'write': 2}
>>> sorted(meter.seconds)
['apply', 'write']
"""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Iterator

    from pyspark.sql import SparkSession

__all__ = ["PhaseMeter", "jobs_started"]


def jobs_started(spark: SparkSession) -> int:
    """How many jobs ``spark``'s application has started so far.

    >>> before = jobs_started(spark); spark.range(3).collect()
    [Row(id=0), Row(id=1), Row(id=2)]
    >>> jobs_started(spark) - before
    1
    """
    ids = spark.sparkContext.statusTracker().getJobIdsForGroup(None)
    return max(ids) + 1 if ids else 0


@dataclass
class PhaseMeter:
    """Seconds and Spark jobs per named phase, summed over the times a phase is entered.

    ``jobs_started`` reads the application's job count (:meth:`for_spark` reads Spark's). A
    phase that raises records nothing: its batch is not committed, so it writes no metrics.
    """

    jobs_started: Callable[[], int]
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    jobs: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    @classmethod
    def for_spark(cls, spark: SparkSession) -> PhaseMeter:
        """A meter counting the jobs of ``spark``'s application.

        >>> meter = PhaseMeter.for_spark(spark)
        >>> with meter.phase("read"):
        ...     rows = spark.range(3).collect()
        >>> dict(meter.jobs)
        {'read': 1}
        """
        return cls(partial(jobs_started, spark))

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Measure the block as (a part of) phase ``name``."""
        jobs, started = self.jobs_started(), time.perf_counter()
        yield
        self.seconds[name] += time.perf_counter() - started
        self.jobs[name] += self.jobs_started() - jobs
