"""The lake's tables as a provenance query reads them, and the names of their variables.

Base tables: one row per live tuple (:mod:`aspen.queries.base_tuples`); views: their rows as of
the last committed batch, with the stored formula; ``readings``: as stored. In process the
tables are pandas frames (delta-rs); on Spark, DataFrames (:func:`aspen.queries.stats.
read_relation`, as continuous queries read them). The registry ``variables`` names each
instance variable by its base tuple (:func:`aspen.sqlprov.tables.tuple_name`).

Example, on a lake::

    lake_frames(settings, ("link", "reachable"))["link"].columns[:3].tolist()
    # ['src', 'dst', 'cost']
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from aspen.lake.tables import VARIABLES
from aspen.settings import Settings
from aspen.sqlprov.tables import SQL_TABLES, tuple_name

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["lake_frames", "spark_frames", "variable_names"]


def _listed(value: Any) -> Any:
    return value.tolist() if hasattr(value, "tolist") else value


def lake_frames(settings: Settings, tables: Iterable[str]) -> dict[str, pd.DataFrame]:
    """Each table of ``tables`` as a pandas frame (delta-rs; TableMissingError for one that
    is not there)."""
    from aspen.lake.committed import read_committed
    from aspen.queries.base_tuples import tuples_pandas

    out = {}
    for name in tables:
        frame = read_committed(settings, name)
        kind = SQL_TABLES[name].kind
        if kind == "base":
            frame = tuples_pandas(name, frame)
        elif kind == "view":
            for column in frame.columns:  # paths come as arrays: DuckDB takes lists
                if frame[column].dtype == object and column != "provenance":
                    frame[column] = frame[column].map(_listed)
        out[name] = frame
    return out


def spark_frames(spark: SparkSession, settings: Settings, tables: Iterable[str]
                 ) -> dict[str, DataFrame]:
    """Each table of ``tables`` as a Spark DataFrame, read as continuous queries read it."""
    from aspen.queries.stats import read_relation, table_versions

    names = tuple(tables)
    versions = table_versions(settings, names)
    return {name: read_relation(spark, settings, name, versions[name]) for name in names}


def variable_names(settings: Settings) -> dict[str, str]:
    """Every registered variable → its base tuple's name (``v12`` → ``link:n1:n2``)."""
    from aspen.lake.deltars import read_table

    frame = read_table(settings, VARIABLES, columns=["var", "relation", "values"])
    out = {}
    for var, relation, values in frame.itertuples(index=False):
        parsed = json.loads(values) if isinstance(values, str) else values
        if isinstance(parsed, dict):
            parsed = list(parsed.values())
        out[str(var)] = tuple_name(str(relation), parsed)
    return out
