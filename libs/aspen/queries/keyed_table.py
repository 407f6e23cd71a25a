"""Small Delta tables of one row per key, rewritten whole by compare-and-swap.

The query registry (``queries``) and the optimizer's saved state (``optimizer_state``) are a
handful of rows each, written by delta-rs without a lease: a writer reads the table at version
*v*, changes its rows and commits exactly *v + 1* (no commit retries); when another writer got
there first it reads again. Two writers at once therefore both land, one after the other.

>>> import tempfile
>>> import pyarrow as pa
>>> lake = Settings(lake=tempfile.mkdtemp())
>>> schema = pa.schema([("key", pa.string()), ("n", pa.int64())])
>>> rewrite(lake, "counters", schema, "key", lambda rows: {**rows, "a": {"key": "a", "n": 1}})
>>> read_rows(lake, "counters", "key")
{'a': {'key': 'a', 'n': 1}}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aspen.errors import LakeError
from aspen.settings import Settings

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["CAS_ATTEMPTS", "read_rows", "rewrite"]

#: Attempts at one compare-and-swap before giving up.
CAS_ATTEMPTS = 20

Rows = dict[str, dict[str, Any]]


def _open(settings: Settings, table: str):
    """The Delta table, or None before its first write."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        return DeltaTable(settings.table_uri(table))
    except TableNotFoundError:
        return None


def _rows(found: Any, key: str) -> Rows:
    """The rows of an opened table (None: none) by its ``key`` column."""
    if found is None:
        return {}
    return {row[key]: row for row in found.to_pyarrow_table().to_pylist()}


def read_rows(settings: Settings, table: str, key: str) -> Rows:
    """Every row of ``table`` by its ``key`` column (none before the first write)."""
    return _rows(_open(settings, table), key)


def rewrite(settings: Settings, table: str, schema: pa.Schema, key: str,
            change: Callable[[Rows], Rows]) -> None:
    """Apply ``change`` to the rows of ``table`` (by ``key``) and write them, by
    compare-and-swap; ``change`` may run more than once and may raise to abort."""
    import pyarrow as pa
    from deltalake import CommitProperties, write_deltalake
    from deltalake.exceptions import CommitFailedError, DeltaError

    for _ in range(CAS_ATTEMPTS):
        found = _open(settings, table)
        new = change(_rows(found, key))
        data = pa.Table.from_pylist([row for _, row in sorted(new.items())], schema=schema)
        try:
            if found is None:  # the first write creates the table
                write_deltalake(settings.table_uri(table), data, mode="error")
            else:
                write_deltalake(found, data, mode="overwrite", schema_mode="overwrite",
                                commit_properties=CommitProperties(max_commit_retries=0))
            return
        except CommitFailedError:
            continue  # another writer committed in between: read again
        except DeltaError as err:  # a concurrent creation: the table exists now
            if found is None and "exists" in str(err).lower():
                continue
            raise
    raise LakeError(f"could not update the table {table!r} in {CAS_ATTEMPTS} attempts "
                    "(concurrent writers)")
