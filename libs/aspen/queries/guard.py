"""A time limit on one continuous query's run: a watchdog cancels it when the limit passes.

:func:`run_limited` runs ``call`` in the calling thread and starts a timer; when the limit
passes first, the timer calls ``cancel`` (for a query on Spark: cancel its job group, whose jobs
are interrupted), and again every :data:`CANCEL_EVERY_SECONDS` until the call returns (a cancel
reaches only the jobs running at that moment); the outcome says *timed out* whatever error the
cancelled call raised. Every exception of the call is caught: the caller records it and goes
on with the next query. The limit is :data:`DEFAULT_TIME_LIMIT` seconds unless
``ASPEN_QUERY_TIME_LIMIT`` says other (``0``: no limit).

>>> import threading
>>> stop = threading.Event()
>>> def hangs():
...     stop.wait(30)
...     raise RuntimeError("cancelled")
>>> outcome = run_limited(hangs, 0.05, stop.set)
>>> outcome.timed_out, outcome.value, str(outcome.error)
(True, None, 'cancelled')
>>> run_limited(lambda: 42, 5.0, stop.set).value
42
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from aspen.errors import ConfigError

__all__ = ["CANCEL_EVERY_SECONDS", "DEFAULT_TIME_LIMIT", "TIME_LIMIT_ENV", "Limited", "run_limited",
           "time_limit_from_env"]

#: Seconds one query may run after a batch before it is cancelled.
DEFAULT_TIME_LIMIT = 120.0
#: Seconds between the watchdog's cancels once the limit passed, until the call returns.
CANCEL_EVERY_SECONDS = 0.5
#: The environment variable that sets another limit (seconds; 0: none).
TIME_LIMIT_ENV = "ASPEN_QUERY_TIME_LIMIT"

T = TypeVar("T")


@dataclass(frozen=True)
class Limited(Generic[T]):
    """What a limited call gave: its value, or the exception it raised; whether the watchdog
    cancelled it; the seconds it took."""

    value: T | None
    error: Exception | None
    timed_out: bool
    seconds: float


def time_limit_from_env(environ: dict[str, str] | None = None) -> float | None:
    """The per-query time limit in seconds (None: no limit), from ``ASPEN_QUERY_TIME_LIMIT``.

    >>> time_limit_from_env({}), time_limit_from_env({TIME_LIMIT_ENV: "30"})
    (120.0, 30.0)
    >>> time_limit_from_env({TIME_LIMIT_ENV: "0"}) is None
    True
    """
    raw = (os.environ if environ is None else environ).get(TIME_LIMIT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIME_LIMIT
    try:
        seconds = float(raw)
    except ValueError:
        raise ConfigError(f"{TIME_LIMIT_ENV} must be a number of seconds, got {raw!r}") from None
    if seconds < 0 or seconds != seconds or seconds == float("inf"):
        raise ConfigError(f"{TIME_LIMIT_ENV} must be 0 (no limit) or a positive number of "
                          f"seconds, got {raw!r}")
    return None if seconds == 0 else seconds


def run_limited(call: Callable[[], T], limit: float | None,
                cancel: Callable[[], None]) -> Limited[T]:
    """Run ``call``; after ``limit`` seconds (None: never) call ``cancel`` from a watchdog
    thread. Never raises what ``call`` raises (any :class:`Exception`)."""
    fired, done = threading.Event(), threading.Event()

    def watchdog() -> None:
        fired.set()
        # again and again until the call returns: a cancel reaches only the jobs running at
        # that moment, not one the call submits a moment later
        while not done.is_set():
            try:
                cancel()
            except Exception:  # noqa: BLE001 - a failed cancel: the next one may do
                pass
            done.wait(CANCEL_EVERY_SECONDS)

    timer = None if limit is None else threading.Timer(limit, watchdog)
    if timer is not None:
        timer.daemon = True
        timer.start()
    started = time.monotonic()
    try:
        value = call()
    except Exception as err:  # noqa: BLE001 - recorded by the caller, never raised
        return Limited(None, err, fired.is_set(), time.monotonic() - started)
    finally:
        done.set()
        if timer is not None:
            timer.cancel()
    return Limited(value, None, False, time.monotonic() - started)
