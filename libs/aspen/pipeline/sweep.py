"""The TTL sweep as a command runs it (``aspen expire``, ``jobs/expire.py``): an instant given as
text, the sweep in process when it is small, a Spark session started only when it is not.

>>> parse_instant("2026-01-01T00:10:00Z").isoformat()
'2026-01-01T00:10:00+00:00'
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aspen.errors import ConfigError
from aspen.settings import Settings

if TYPE_CHECKING:
    from aspen.lake.expire_local import ExpireReport

__all__ = ["parse_instant", "sweep"]


def parse_instant(text: str) -> datetime:
    """An ISO-8601 instant (``Z`` allowed; naive means UTC); else a one-line
    :class:`~aspen.errors.ConfigError` naming ``--now``.

    >>> parse_instant("2026-01-01 00:10").tzinfo
    datetime.timezone.utc
    """
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as err:
        raise ConfigError(f"--now must be an ISO-8601 time such as 2026-01-01T00:10:00Z, "
                          f"not {text!r}") from err
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def sweep(settings: Settings, now: str | None = None) -> ExpireReport:
    """Kill every instance whose TTL has passed at ``now`` (ISO text; default: the current
    time), under the lake's leases (:func:`aspen.lake.expire.expire_due`).

    Example, on a lake::

        sweep(Settings(lake="/srv/lake"), "2026-01-01T00:10:00Z").expired
        # 3
    """
    from aspen.lake.expire import expire_due
    from aspen.spark.session import get_spark

    moment = parse_instant(now) if now else None
    # the session starts only if the sweep is too large to run in process
    return expire_due(lambda: get_spark("aspen-expire"), settings, moment)
