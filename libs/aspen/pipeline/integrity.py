"""Is the lake what the last committed batch left? Missing or damaged view tables, change log
or runtime state are found before a batch commits on top of them.

A batch appends to ``view_changes`` and commits a ledger row without reading the view tables,
so a view table folder removed by hand, a data file of the change log deleted, or a lost engine
state would otherwise go unnoticed by ``aspen maintain`` while every reader fails. Before a
batch writes anything :func:`check_lake` looks, without scanning a table:

- every table the ledger governs (the views, ``view_changes``, ``node_state``) exists, its Delta
  log reaches the version the ledger committed, and every data file that version (or, when
  housekeeping only compacted it since, the latest) references is there with the size its log
  records (:func:`aspen.lake.table_files.damaged_files`: one listing per folder);
- when the local runtime committed last, ``engine_state`` exists, its files are whole and its
  log's statistics show a state at or before the committed batch.

What it finds is refused in one line naming the damage and the remedy, ``aspen maintain
--rebuild`` (:class:`DamagedLakeError`). The rebuild rewrites every view, an empty change log and
the runtime's state from the registry as one committed batch; :func:`prepare_rebuild` first moves
aside, to ``<lake>/_damaged/<table>-<time>``, a table whose Delta log cannot be read at all
(an overwrite needs to read the log). Readers (``aspen show``, ``aspen verify``) that fail on a
damaged lake say the same line (:func:`explained`).

>>> Damage("reachable", "is missing").describe()
"view table 'reachable' is missing"
>>> message([Damage("view_changes", "has data file x.parquet missing")])
"the lake is damaged: change log 'view_changes' has data file x.parquet missing; rebuild every \
view from the base tables with `aspen maintain --rebuild`"
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aspen.catalog import VIEWS
from aspen.errors import AspenError, LakeError
from aspen.lake.view_log import VIEW_CHANGES
from aspen.pipeline import ledger
from aspen.settings import Settings

if TYPE_CHECKING:
    from deltalake import DeltaTable

__all__ = ["DAMAGED_FOLDER", "REMEDY", "STATE_TABLES", "Damage", "DamagedLakeError",
           "check_lake", "explained", "find_damage", "message", "prepare_rebuild"]

#: The state table of each runtime.
STATE_TABLES = {"local": "engine_state", "spark": "node_state"}
#: Where a rebuild moves a table whose log cannot be read, under the lake root.
DAMAGED_FOLDER = "_damaged"
REMEDY = "rebuild every view from the base tables with `aspen maintain --rebuild`"
#: How many damages a message names before it counts the rest.
NAMED = 3


class DamagedLakeError(LakeError):
    """A table the last committed batch left is missing or damaged (rebuild with ``aspen
    maintain --rebuild``)."""


@dataclass(frozen=True)
class Damage:
    """One missing or damaged table: its name and what is wrong."""

    table: str
    what: str

    def describe(self) -> str:
        """The damage in words: the table's role, its name, what is wrong."""
        return f"{_role(self.table)} '{self.table}' {self.what}"


def _role(table: str) -> str:
    if table in VIEWS:
        return "view table"
    if table == VIEW_CHANGES:
        return "change log"
    return {"engine_state": "engine state", "node_state": "node state"}.get(table, "table")


def message(damages: Sequence[Damage]) -> str:
    """The one line a damaged lake is refused with: the first :data:`NAMED` damages, how many
    more, and :data:`REMEDY`."""
    named = "; ".join(d.describe() for d in damages[:NAMED])
    more = f" (and {len(damages) - NAMED} more)" if len(damages) > NAMED else ""
    return f"the lake is damaged: {named}{more}; {REMEDY}"


def find_damage(settings: Settings, last: ledger.LedgerEntry | None = None,
                versions: dict[str, int] | None = None) -> list[Damage]:
    """Every missing or damaged table of those the committed batches left (see the module
    docstring); empty for a sound lake or one without a committed batch. Reads Delta logs and
    lists folders; no data file is read.

    >>> find_damage(Settings(lake="/nonexistent/lake"))
    []
    """
    if last is None or versions is None:
        last, versions = ledger.last_and_versions(settings)
    if last.batch_id == 0:
        return []
    # another runtime's state is not read by the next batch: a switch rebuilds without it
    other_states = set(STATE_TABLES.values()) - {STATE_TABLES.get(last.runtime)}
    found = [d for name, version in sorted(versions.items()) if name not in other_states
             and (d := _governed_damage(settings, name, version)) is not None]
    if last.runtime == "local":
        found += _engine_state_damage(settings, last)
    return found


def check_lake(settings: Settings) -> None:
    """Raise :class:`DamagedLakeError` (one line, :func:`message`) when :func:`find_damage`
    finds anything; what a batch calls before it writes.

    >>> check_lake(Settings(lake="/nonexistent/lake"))
    """
    damages = find_damage(settings)
    if damages:
        raise DamagedLakeError(message(damages))


@contextmanager
def explained(settings: Settings) -> Iterator[None]:
    """Around a read of the committed views: a failure on a damaged lake becomes the one line
    of :func:`message` (a sound lake's errors pass unchanged). Costs nothing unless the read
    fails.

    >>> with explained(Settings(lake="/nonexistent/lake")):
    ...     pass
    """
    try:
        yield
    except DamagedLakeError:
        raise
    except Exception as err:
        if isinstance(err, AspenError) and not isinstance(err, LakeError):
            raise
        from aspen.pipeline.boundary import damaged_log_entry

        torn = damaged_log_entry(str(err), settings.lake_uri)
        if torn is not None:  # one torn log entry: restoring that file is the smaller remedy
            raise DamagedLakeError(torn) from err
        try:
            damages = find_damage(settings)
        except Exception:  # the ledger itself unreadable: the original error says more
            damages = []
        if damages:
            raise DamagedLakeError(message(damages)) from err
        raise


def _open_latest(settings: Settings, name: str) -> DeltaTable | None:
    """The latest version of ``name`` (None: no table); raises when its log cannot be read."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        return DeltaTable(settings.table_uri(name))
    except TableNotFoundError:
        return None


def _log_readable(settings: Settings, name: str) -> bool:
    """Whether ``name``'s Delta log can be read (or there is no table: nothing to read)."""
    try:
        _open_latest(settings, name)
    except Exception:  # delta-rs reports a torn or gapped log in several exception types
        return False
    return True


def _governed_damage(settings: Settings, name: str, version: int) -> Damage | None:
    """What is wrong with the ledger-governed table ``name`` committed at ``version``."""
    from aspen.lake.deltars import only_compacted_since
    from aspen.lake.table_files import damaged_files

    try:
        table = _open_latest(settings, name)
    except Exception as err:  # delta-rs reports a torn or gapped log in several exception types
        from aspen.pipeline.boundary import damaged_log_entry

        torn = damaged_log_entry(str(err), settings.lake_uri)
        ours = torn is not None and torn.startswith(f"table '{name}': ")
        detail = f" ({torn.split(': ', 1)[1].split(';')[0]})" if ours and torn else ""
        return Damage(name, f"has a Delta log that cannot be read{detail}")
    if table is None:
        return Damage(name, f"is missing (the ledger committed its version {version})")
    latest = table.version()
    if latest < version:
        return Damage(name, f"is at version {latest}, behind version {version} the ledger "
                            "committed")
    try:
        # a crashed run's later versions are restored away; housekeeping's compactions are kept
        if latest > version and not only_compacted_since(settings, name, version):
            table.load_as_version(version)
        bad = damaged_files(settings, name, table=table)
    except Exception:
        return Damage(name, f"cannot be read at version {version} the ledger committed")
    return _files_damage(name, bad)


def _files_damage(name: str, bad: list[tuple[str, str]]) -> Damage | None:
    if not bad:
        return None
    (path, why), more = bad[0], len(bad) - 1
    others = f" and {more} more" if more else ""
    return Damage(name, f"has data file {path} {why}{others}")


def _engine_state_damage(settings: Settings, last: ledger.LedgerEntry) -> list[Damage]:
    """What is wrong with ``engine_state``, which a local batch's cold start loads."""
    from aspen.lake.table_files import damaged_files

    name = STATE_TABLES["local"]
    try:
        table = _open_latest(settings, name)
    except Exception:  # as above
        return [Damage(name, "has a Delta log that cannot be read")]
    if table is None:
        return [Damage(name, f"is missing (batch {last.batch_id} ran locally)")]
    bad = _files_damage(name, damaged_files(settings, name, table=table))
    if bad is not None:
        return [bad]
    actions = table.get_add_actions(flatten=True)
    if "min.batch_id" in actions.column_names:
        lowest = [b for b in actions.column("min.batch_id").to_pylist() if b is not None]
        if len(lowest) == actions.num_rows and not any(b <= last.batch_id for b in lowest):
            return [Damage(name, f"holds no state at or before batch {last.batch_id}")]
    return []


def prepare_rebuild(settings: Settings, tables: Sequence[str]) -> list[str]:
    """Before a rebuild writes ``tables`` afresh: move aside each of them whose Delta log cannot
    be read (to ``<lake>/_damaged/<table>-<UTC time>``; a local lake only); lines saying what
    was moved. Tables merely missing files need nothing: an overwrite reads only the log."""
    notes = []
    for name in tables:
        if _log_readable(settings, name):
            continue
        source = settings.local_table_path(name)
        if source is None:
            raise DamagedLakeError(
                f"the Delta log of table '{name}' cannot be read and the lake is not local: "
                f"move {settings.table_uri(name)} aside by hand, then rerun `aspen maintain "
                "--rebuild`")
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        target = os.path.join(os.path.dirname(source), DAMAGED_FOLDER, f"{name}-{stamp}")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.replace(source, target)
        notes.append(f"  moved the unreadable table '{name}' aside to {target}")
    return notes
