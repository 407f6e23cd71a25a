"""What the lake-side provenance needs to follow the lake from one committed batch to the next:
the versions it reads (:class:`LakePin`), the registry read file by file (:class:`Registry`, so a
new version re-reads only the files a batch wrote), and the views' rows a later batch changed,
from the change log (:func:`log_changes`).

A view as of a committed batch is its snapshot plus the change log (:mod:`aspen.lake.view_log`).
Between two committed batches that did not compact, every snapshot keeps its version and the
log only gained files, each holding the rows of a later batch; a compaction or a rebuild
rewrites the snapshots and empties the log, and then :func:`log_changes` says so (None) and the
caller decodes afresh.

>>> from aspen.settings import Settings
>>> pin_lake(Settings(lake="/nonexistent/lake"))
LakePin(versions={}, batch=0, variables=None)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aspen.catalog import VIEWS
from aspen.errors import TableMissingError
from aspen.lake.committed import LEDGER, versions_in
from aspen.lake.deltars import read_table, table_exists, table_version_or_none, text_field
from aspen.lake.view_log import VIEW_CHANGES
from aspen.pipeline.provenance_index import net_changes
from aspen.settings import Settings

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = ["REGISTRY", "Followed", "LakePin", "Registry", "changed_rows", "log_changes", "pin_lake"]

#: The variable registry: what a variable stands for, and whether it is live.
REGISTRY = "variables"
#: The ledger-governed tables provenance is read from: every view and their change log.
_PINNED = frozenset({*VIEWS, VIEW_CHANGES})


@dataclass(frozen=True)
class Followed:
    """How a reading of the lake's provenance was derived from the one before: the batches it
    moved between, the view rows it re-read from the change log and the registry files it
    re-read."""

    from_batch: int
    to_batch: int
    rows: int
    registry_files: int


@dataclass(frozen=True)
class LakePin:
    """The versions one reading of the lake's provenance reads: each view's and the change
    log's as a committed batch left them (``versions``), that batch (0: none yet) and the
    registry's version (None: no registry)."""

    versions: dict[str, int] = field(default_factory=dict)
    batch: int = 0
    variables: int | None = None


def pin_lake(settings: Settings, wanted: Iterable[tuple[str, int]] | None = None) -> LakePin:
    """The committed batch whose versions are ``wanted`` (``(table, version)`` pairs, as
    :func:`aspen.pipeline.lake_provenance.provenance_versions` gives them; the last batch whose
    views and change log have these versions), else the last committed batch."""
    wanted_map = dict(wanted) if wanted is not None else None
    variables = (wanted_map.get(REGISTRY) if wanted_map is not None
                 else table_version_or_none(settings, REGISTRY))
    if not table_exists(settings, LEDGER):
        return LakePin({}, 0, variables)
    ledger = read_table(settings, LEDGER).sort_values("batch_id")
    if ledger.empty:
        return LakePin({}, 0, variables)
    latest = LakePin(versions_in(ledger), int(ledger["batch_id"].iloc[-1]), variables)
    if wanted_map is None:
        return latest
    target = {name: v for name, v in wanted_map.items() if name in _PINNED}
    found: LakePin | None = None
    seen: dict[str, int] = {}
    for position in range(len(ledger)):  # the versions as of each committed batch, in order
        seen.update(versions_in(ledger.iloc[position : position + 1]))
        if {name: v for name, v in seen.items() if name in _PINNED} == target:
            found = LakePin(dict(seen), int(ledger["batch_id"].iloc[position]), variables)
    return found or latest


class Registry:
    """The variable registry at one version, kept file by file: :meth:`at` another version
    re-reads only the files that version added (apply and expire rewrite the files whose rows
    they change); ``reread`` counts the files this version read itself."""

    def __init__(self, version: int, files: dict[str, pa.Table], schema: pa.Schema | None,
                 reread: int) -> None:
        self.version = version
        self.reread = reread
        self._files = files
        self._schema = schema
        self._frame: pd.DataFrame | None = None

    @classmethod
    def read(cls, settings: Settings, version: int | None) -> Registry:
        """The registry at ``version`` (None: the latest); TableMissingError without one."""
        return cls(-1, {}, None, 0).at(settings, version)

    def at(self, settings: Settings, version: int | None) -> Registry:
        """The registry at ``version`` (None: the latest): this one's tables of the files still
        there, and the new files read."""
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        if version is not None and version == self.version:
            return self
        try:
            table = DeltaTable(settings.table_uri(REGISTRY), version=version)
        except TableNotFoundError as err:
            raise TableMissingError(
                f"table '{REGISTRY}' does not exist under {settings.lake_uri} "
                "(run `aspen ingest` and `aspen maintain` first)") from err
        dataset = table.to_pyarrow_dataset()
        files: dict[str, pa.Table] = {}
        reread = 0
        for fragment in dataset.get_fragments():
            kept = self._files.get(fragment.path)
            if kept is None:
                kept = fragment.to_table(schema=dataset.schema)
                reread += 1
            files[fragment.path] = kept
        return Registry(table.version(), files, dataset.schema, reread)

    @property
    def frame(self) -> pd.DataFrame:
        """Every row, as one pandas frame."""
        if self._frame is None:
            import pyarrow as pa

            tables = list(self._files.values())
            if tables:
                whole = pa.concat_tables(tables, promote_options="permissive")
            else:
                whole = (self._schema or pa.schema([])).empty_table()
            self._frame = whole.to_pandas()
        return self._frame


def _log_files(settings: Settings, version: int) -> set[str]:
    from deltalake import DeltaTable

    return set(DeltaTable(settings.table_uri(VIEW_CHANGES), version=version).file_uris())


def log_changes(settings: Settings, old: LakePin, new: LakePin,
                views: Iterable[str]) -> dict[str, dict[tuple, Any]] | None:
    """Per view of ``views``, its rows the batches after ``old`` through ``new`` changed (key →
    new bytes, or :data:`aspen.pipeline.provenance_index.DROPPED`); None when they cannot be
    read from the log: a snapshot rewritten in between (a compaction, a rebuild), the log
    compacted or emptied, or ``new`` before ``old``."""
    views = tuple(views)
    if new.batch < old.batch:
        return None
    if any(old.versions.get(view) != new.versions.get(view) for view in views):
        return None
    old_log, new_log = old.versions.get(VIEW_CHANGES), new.versions.get(VIEW_CHANGES)
    if not views or old_log == new_log:
        return {view: {} for view in views}
    if new_log is None or (old_log is not None and new_log < old_log):
        return None
    # appended to, never rewritten: every file of the old version is still there
    if old_log is not None and not _log_files(settings, old_log) <= _log_files(settings, new_log):
        return None
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    dataset = DeltaTable(settings.table_uri(VIEW_CHANGES), version=new_log).to_pyarrow_dataset()
    wanted = text_field("view").isin(list(views)) & (pc.field("batch_id") > old.batch)
    frame = dataset.to_table(filter=wanted).to_pandas()
    return {view: net_changes(view, frame) for view in views}


def changed_rows(changes: Mapping[str, Mapping[tuple, Any]]) -> int:
    """How many rows ``changes`` (:func:`log_changes`) touch, over every view.

    >>> changed_rows({"reachable": {("a", "b"): b"x"}, "min_cost": {}})
    1
    """
    return sum(len(rows) for rows in changes.values())
