"""Whether a Delta table's data files are all there: what its log names against what the store
holds, without reading a data file.

A table whose ``_delta_log`` names a Parquet file that is gone (or shorter than the log says)
opens fine and takes appends, yet every read of it fails. :func:`damaged_files` finds such
files cheaply: the log's add actions (path and size) of one version, against one listing per
folder holding them — :func:`os.scandir` on a local lake, delta-rs' object-store listing
(:class:`deltalake.fs.DeltaStorageHandler`) on any other. The ``_delta_log`` folder itself is
not listed, but by a store's single recursive listing of a table with more partition folders
than :data:`MAX_FOLDER_LISTINGS` (fewer requests than a listing each).

>>> import tempfile, pandas as pd
>>> from aspen.lake.deltars import write_table
>>> lake = Settings(lake=tempfile.mkdtemp())
>>> write_table(lake, "t", pd.DataFrame({"a": [1, 2]}))
>>> damaged_files(lake, "t")
[]
>>> import os; os.remove(_local_folder(lake.table_uri("t")) + "/" + data_files(lake, "t")[0][0])
>>> [why for _, why in damaged_files(lake, "t")]
['missing']
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from aspen.settings import Settings

if TYPE_CHECKING:
    from deltalake import DeltaTable

__all__ = ["MAX_FOLDER_LISTINGS", "damaged_files", "data_files", "listing"]

#: On an object store, more folders than this (a partitioned table's) are listed as one
#: recursive listing of the table (the log's files included) instead of one listing each.
MAX_FOLDER_LISTINGS = 8


def data_files(settings: Settings, name: str, version: int | None = None) -> list[tuple[str, int]]:
    """(path relative to the table, size in bytes) of every data file version ``version`` of
    table ``name`` (default the latest) references, from its Delta log (raises delta-rs'
    ``TableNotFoundError`` or another delta-rs error when the log cannot be read)."""
    from deltalake import DeltaTable

    return _files_of(DeltaTable(settings.table_uri(name), version=version))


def _files_of(table: DeltaTable) -> list[tuple[str, int]]:
    actions = table.get_add_actions(flatten=True)
    paths, sizes = actions.column("path").to_pylist(), actions.column("size_bytes").to_pylist()
    return [(unquote(p), int(s)) for p, s in zip(paths, sizes, strict=True)]


def _local_folder(uri: str) -> str | None:
    """The filesystem folder of a ``file://`` table URI, else None."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else None


def listing(uri: str, folders: set[str], local: bool | None = None) -> dict[str, int]:
    """Relative path → size of the files directly inside each of ``folders`` (relative to the
    table at ``uri``; ``""`` is the table's own folder); a missing folder lists nothing. The
    filesystem for a local table, delta-rs' object-store listing otherwise (``local=False``
    forces the latter, for tests).

    >>> listing("file:///nonexistent/t", {""})
    {}
    """
    root = _local_folder(uri) if local is not False else None
    found: dict[str, int] = {}
    if root is not None:
        for folder in folders:
            try:
                with os.scandir(os.path.join(root, folder) if folder else root) as entries:
                    for entry in entries:
                        if entry.is_file():
                            found[f"{folder}/{entry.name}" if folder else entry.name] = \
                                entry.stat().st_size
            except (FileNotFoundError, NotADirectoryError):
                continue
        return found
    import pyarrow.fs as pafs
    from deltalake.fs import DeltaStorageHandler

    handler = DeltaStorageHandler(uri)
    # a store lists a folder per request: many partition folders are one recursive listing
    whole = len(folders) > MAX_FOLDER_LISTINGS
    for folder in [""] if whole else sorted(folders):
        try:
            infos = handler.get_file_info_selector(
                pafs.FileSelector(folder, allow_not_found=True, recursive=whole))
        except (FileNotFoundError, OSError):
            continue
        for info in infos:
            path = info.path.lstrip("/")
            if info.type == pafs.FileType.File and (os.path.dirname(path) in folders):
                found[path] = int(info.size)
    return found


def damaged_files(settings: Settings, name: str, version: int | None = None,
                  local: bool | None = None, table: DeltaTable | None = None,
                  ) -> list[tuple[str, str]]:
    """The data files of version ``version`` of table ``name`` (default the latest; ``table``:
    that version already opened) that are ``missing`` or ``truncated`` (another size than the
    log records), as (path, why); empty when every one is there. One listing per folder
    holding data files (:func:`listing`)."""
    from deltalake import DeltaTable

    uri = settings.table_uri(name)
    files = _files_of(table if table is not None else DeltaTable(uri, version=version))
    if not files:
        return []
    folders = {os.path.dirname(path) for path, _ in files if "://" not in path}
    found = listing(uri, folders, local)
    out = []
    for path, size in files:
        if "://" in path:  # an absolute file (a shallow clone's): not under this table
            continue
        if path not in found:
            out.append((path, "missing"))
        elif found[path] != size:
            out.append((path, "truncated"))
    return out
