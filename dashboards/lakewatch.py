"""Whether the lake moved: the Delta versions of the tables a page shows (its fingerprint),
compared with those when the page was drawn, and how often the sidebar checks. Reads only the
tables' logs (no data file is opened); part of the reader layer, like :mod:`lakeview`.

>>> watched_tables(["ledger", "maintainer_lease", "reachable"]), refresh_interval({})
(['ledger'], 5.0)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from urllib.parse import urlparse

from deltalake.exceptions import DeltaError
from lakeview import lake_tables

from aspen.lake.committed import GOVERNED_TABLES
from aspen.lake.deltars import table_version_or_none
from aspen.lake.housekeeping import LEASE_TABLES, known_tables
from aspen.settings import Settings

__all__ = ["REFRESH_ENV", "REFRESH_S", "Fingerprint", "lake_fingerprint", "lake_moved",
           "refresh_interval", "watched_tables"]

#: Seconds between two checks of whether the lake moved (the sidebar's refresh); the environment
#: variable REFRESH_ENV overrides it (0 turns the refresh off).
REFRESH_S = 5.0
REFRESH_ENV = "ASPEN_DASHBOARD_REFRESH_S"

#: ``(table, Delta version)`` of the watched tables that exist, sorted; version -1 for a table
#: delta-rs cannot open.
Fingerprint = tuple[tuple[str, int], ...]


def watched_tables(names: Iterable[str]) -> list[str]:
    """The tables whose new versions the pages should show: every table but the leases (renewed
    while a writer runs, with nothing for a page to show) and the tables readers see only as of
    the last committed batch (a new version of those shows once the ledger commits it).

    >>> watched_tables(["ledger", "maintainer_lease", "reachable", "quarantine"])
    ['ledger', 'quarantine']
    """
    return sorted(n for n in set(names) if n not in LEASE_TABLES and n not in GOVERNED_TABLES)


def lake_fingerprint(settings: Settings, names: Iterable[str] | None = None) -> Fingerprint:
    """The Delta versions of the watched tables (:func:`watched_tables` of ``names``, by
    default every table of a local lake, or every table Aspen writes on an object store): it
    changes exactly when one of them gets a commit. Reads only the tables' logs.

    >>> lake_fingerprint(Settings(lake="/nonexistent/lake"))
    ()
    """
    if names is None:
        names = lake_tables(settings)  # a local lake's folders, else the pipeline's own tables
        if urlparse(settings.lake_uri).scheme != "file":  # an object store is not listed
            names = [*names, *known_tables()]
    chosen = watched_tables(names)
    found: list[tuple[str, int]] = []
    for name in chosen:
        try:
            version = table_version_or_none(settings, name)
        except (DeltaError, OSError, ValueError):  # a damaged table: the same mark every time
            version = -1
        if version is not None:
            found.append((name, int(version)))
    return tuple(found)


def lake_moved(previous: Fingerprint | None, settings: Settings) -> bool:
    """Whether the lake changed since ``previous`` (a :func:`lake_fingerprint` taken when the
    page was drawn); False when there is none to compare with.

    >>> lake_moved((("ledger", 3),), Settings(lake="/nonexistent/lake")), lake_moved(None, None)
    (True, False)
    """
    if previous is None:
        return False
    return lake_fingerprint(settings) != tuple(previous)


def refresh_interval(environ: Mapping[str, str]) -> float | None:
    """Seconds between two checks of the lake: :data:`REFRESH_ENV` from ``environ`` when it is a
    number (0 or less: no automatic refresh, ``None``), else :data:`REFRESH_S`.

    >>> refresh_interval({}), refresh_interval({REFRESH_ENV: "2.5"})
    (5.0, 2.5)
    >>> refresh_interval({REFRESH_ENV: "0"}), refresh_interval({REFRESH_ENV: "soon"})
    (None, 5.0)
    """
    raw = environ.get(REFRESH_ENV, "").strip()
    if not raw:
        return REFRESH_S
    try:
        seconds = float(raw)
    except ValueError:
        return REFRESH_S
    if not math.isfinite(seconds):
        return REFRESH_S
    return seconds if seconds > 0 else None
