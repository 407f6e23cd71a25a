"""The SQL reads an explanation of a reading stream makes over the lake's tables: delta-rs'
query engine, each table's files pruned by its Delta log's statistics, no Spark.

>>> sql_text("o'clock")
"'o''clock'"
>>> timestamp_literal("2026-01-01T00:00:05")
"'2026-01-01T00:00:05.000000Z'"
>>> micros("1970-01-01T00:00:01Z")
1000000
"""

from __future__ import annotations

from datetime import UTC
from typing import TYPE_CHECKING, Any

from aspen.lake import tables
from aspen.settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["micros", "query", "read_where", "retained_from", "sql_text", "timestamp_literal"]


def query(settings: Settings, name: str, sql: str) -> pd.DataFrame:
    """SQL ``sql`` over table ``name``, registered as ``t``."""
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder

    table = DeltaTable(settings.table_uri(name))
    return pa.table(QueryBuilder().register("t", table).execute(sql).read_all()).to_pandas()


def read_where(settings: Settings, name: str, predicate: str,
               columns: list[str] | None = None) -> pd.DataFrame:
    """Rows of ``name`` matching SQL ``predicate`` (its ``columns``, or all)."""
    selected = ", ".join(f'"{c}"' for c in columns) if columns else "*"
    return query(settings, name, f"SELECT {selected} FROM t WHERE {predicate}")


def sql_text(value: str) -> str:
    """``value`` as a SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def retained_from(settings: Settings) -> int | None:
    """The lowest reading id still retained (None when no reading is)."""
    low = query(settings, tables.READINGS, "SELECT min(id) AS low FROM t")["low"].iloc[0]
    return None if low is None or low != low else int(low)


def timestamp_literal(value: Any) -> str:
    """A UTC timestamp (naive: UTC) as a SQL literal delta-rs' engine compares with a timestamp
    column."""
    import pandas as pd

    stamp = pd.Timestamp(value)
    stamp = stamp.tz_localize(UTC) if stamp.tzinfo is None else stamp.tz_convert(UTC)
    return f"'{stamp.strftime('%Y-%m-%dT%H:%M:%S.%f')}Z'"


def micros(value: Any) -> int:
    """A timestamp (pandas or datetime, UTC) as microseconds since the epoch."""
    import pandas as pd

    stamp = pd.Timestamp(value)
    if stamp.tzinfo is None:
        stamp = stamp.tz_localize(UTC)
    return int(stamp.value // 1000)
