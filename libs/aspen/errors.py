"""The one exception hierarchy of Aspen, rooted at :class:`AspenError`.

Every error a user can cause (bad arguments, bad input files, an empty lake) is an
``AspenError`` subclass with a message a person can act on; the CLI prints it as one line.

>>> try:
...     raise UnknownViewError("unknown view 'reach'; known views: reachable")
... except AspenError as err:
...     print(err)
unknown view 'reach'; known views: reachable
"""

from __future__ import annotations

__all__ = [
    "AspenError",
    "ConfigError",
    "SetupError",
    "InvalidRecordError",
    "StateError",
    "LakeError",
    "TableMissingError",
    "UnknownViewError",
    "UnknownKeyError",
    "NotBuiltYetError",
    "ProvenanceError",
    "OrphanDeltaError",
    "ProvenanceExpiredError",
    "EngineError",
    "InjectedCrash",
]


class AspenError(Exception):
    """Root of every error Aspen raises on purpose."""


class ConfigError(AspenError, ValueError):
    """A setting or command-line argument is invalid."""


class SetupError(AspenError):
    """Something the project installs is missing (jars, Java, packages)."""


class InvalidRecordError(AspenError, ValueError):
    """An update record is invalid; ``reason`` says why in words a person can act on."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class LakeError(AspenError):
    """A problem with the Delta lake (layout, versions, concurrent writers)."""


class LeaseBusyError(LakeError):
    """Another writer holds the lake lease a command needs (after waiting for it)."""


class TableMissingError(LakeError):
    """A table the command needs does not exist yet (run ``aspen ingest`` / ``maintain`` first)."""


class UnknownViewError(AspenError, KeyError):
    """The view name is not one of the views Aspen maintains."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class UnknownKeyError(AspenError, KeyError):
    """A node, link, sensor or view tuple named by the user does not exist."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class NotBuiltYetError(AspenError):
    """A capability named in the design that this build does not have yet."""


class QueryRunError(AspenError):
    """A continuous query failed on its data, as Spark's ANSI mode fails it (an invalid CAST, a
    division by zero); the message starts with Spark's error class."""


class ProvenanceError(AspenError):
    """Invalid provenance: an undecodable BDD, an unknown variable, a bad order."""


class OrphanDeltaError(ProvenanceError):
    """A delta-encoded TID set was read without the full set it is based on."""


class EngineError(AspenError):
    """An operator or plan was used outside its contract."""


class StateError(EngineError):
    """Stored engine state that is not Aspen's (or names what no state holds): not loaded."""


class InjectedCrash(AspenError):
    """A crash injected on purpose at a named point (``ASPEN_CRASH_AT``), to test recovery."""


class ProvenanceExpiredError(LakeError):
    """The readings behind a window are past their retention: provenance cannot be rebuilt."""
