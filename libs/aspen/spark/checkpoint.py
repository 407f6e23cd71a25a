"""Where a maintained batch keeps the frames it checkpoints: Spark's default, or a storage level
the application chooses.

The rounds of ``maintain --runtime spark`` cut each round's lineage with ``localCheckpoint``
(as do the batch's apply and ``aspen expire``, through :func:`checkpointed`);
the rows carry every node's state and journal as binary values, large for a large network.
Spark's default level keeps the blocks in the executors' memory first (on one machine: the
driver JVM's heap), so a large run can end in ``OutOfMemoryError: Java heap space``. Setting
:data:`CHECKPOINT_LEVEL_CONF` to ``DISK_ONLY``
(``spark-submit --conf spark.aspen.checkpointStorageLevel=DISK_ONLY``) keeps them on local
disk instead. Not the default: where memory suffices, disk is slower (measurements:
docs/performance.md).

>>> level_named("disk_only").useMemory, level_named(None)
(False, None)
"""

from __future__ import annotations

from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from aspen.errors import ConfigError

__all__ = ["CHECKPOINT_LEVEL_CONF", "checkpoint_level", "checkpointed", "checkpointed_rdd",
           "level_named"]

#: The Spark conf key naming the storage level of a batch's checkpoints (unset: Spark's default).
CHECKPOINT_LEVEL_CONF = "spark.aspen.checkpointStorageLevel"


def level_named(name: str | None) -> StorageLevel | None:
    """The :class:`~pyspark.StorageLevel` called ``name`` (any case); None for no name.

    >>> level_named("MEMORY_ONLY").useDisk
    False
    >>> level_named("ON_A_FLOPPY")
    Traceback (most recent call last):
    ...
    aspen.errors.ConfigError: spark.aspen.checkpointStorageLevel is 'ON_A_FLOPPY', not a Spark \
storage level (e.g. DISK_ONLY, MEMORY_AND_DISK)
    """
    if not name:
        return None
    level = getattr(StorageLevel, name.strip().upper(), None)
    if not isinstance(level, StorageLevel):
        raise ConfigError(f"{CHECKPOINT_LEVEL_CONF} is {name!r}, not a Spark storage level "
                          "(e.g. DISK_ONLY, MEMORY_AND_DISK)")
    return level


def checkpoint_level(spark: SparkSession) -> StorageLevel | None:
    """The storage level the application's conf asks for (None: Spark's default);
    :class:`~aspen.errors.ConfigError` for a name that is not one."""
    return level_named(spark.conf.get(CHECKPOINT_LEVEL_CONF, None))


def checkpointed(frame: DataFrame, spark: SparkSession) -> DataFrame:
    """``frame`` checkpointed now (``localCheckpoint(eager=True)``) at the application's level."""
    return frame.localCheckpoint(eager=True, storageLevel=checkpoint_level(spark))


def checkpointed_rdd(frame: DataFrame) -> Any:
    """The JVM RDD holding a :func:`checkpointed` frame's blocks (classic PySpark: it sits under
    the frame's ``LogicalRDD`` plan), to release them or to read their storage level."""
    return frame._jdf.queryExecution().analyzed().rdd()
