"""Settings read once at the edge (CLI, job entry points) and passed down.

Every table location derives from one lake root, a local path or a URI.

>>> s = Settings(lake="file:///tmp/lake")
>>> s.table_uri("updates")
'file:///tmp/lake/updates'
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from aspen.errors import ConfigError

__all__ = ["Settings", "DEFAULT_LAKE", "lake_root_uri"]

DEFAULT_LAKE = "./lakehouse"


def lake_root_uri(lake: str) -> str:
    """Normalise a lake root to a URI without a trailing slash.

    A local path (relative or absolute) becomes a ``file://`` URI; a URI
    (``s3a://``, ``abfss://``, ``file://`` …) is kept as it is.

    >>> lake_root_uri("s3a://bucket/lake/")
    's3a://bucket/lake'
    """
    if not lake:
        raise ConfigError("the lake root is empty; pass --lake PATH or set ASPEN_LAKE")
    parsed = urlparse(lake)
    if parsed.scheme and len(parsed.scheme) > 1:  # not a Windows drive letter
        return lake.rstrip("/")
    return Path(lake).expanduser().resolve().as_uri()


@dataclass(frozen=True)
class Settings:
    """What a command needs to know about its environment."""

    lake: str = field(default_factory=lambda: os.environ.get("ASPEN_LAKE", DEFAULT_LAKE))
    partitions: int = 4
    mode: str = "lazy"

    def __post_init__(self) -> None:
        if self.partitions < 1:
            raise ConfigError(f"--partitions must be at least 1, got {self.partitions}")
        if self.mode not in ("lazy", "eager"):
            raise ConfigError(f"--mode must be 'lazy' or 'eager', got {self.mode!r}")

    @property
    def lake_uri(self) -> str:
        """The lake root as a URI."""
        return lake_root_uri(self.lake)

    def table_uri(self, name: str) -> str:
        """The URI of table ``name`` under the lake root."""
        return f"{self.lake_uri}/{name}"

    def local_table_path(self, name: str) -> str | None:
        """A filesystem path for ``name`` when the lake is local, else ``None``."""
        uri = self.table_uri(name)
        parsed = urlparse(uri)
        return parsed.path if parsed.scheme == "file" else None
