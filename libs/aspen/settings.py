"""Settings read once at the edge (CLI, job entry points) and passed down.

Every table location derives from one lake root, a local path or a URI.

>>> s = Settings(lake="file:///tmp/lake")
>>> s.table_uri("updates")
'file:///tmp/lake/updates'
"""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

from aspen.errors import ConfigError, LakeError

__all__ = [
    "DEFAULT_LAKE",
    "MAX_PARTITIONS",
    "OBJECT_STORE_SCHEMES",
    "ENGINE_CORES",
    "VARIABLE_ORDERS",
    "Settings",
    "check_lake_root",
    "check_lake_text",
    "lake_root_uri",
    "normal_uri",
]

DEFAULT_LAKE = "./lakehouse"
#: The BDD variable orders maintenance can keep (Liu 2016, §3.5): depth-first labelling of the
#: link graph and the sensor field (the default), breadth-first, and arrival order.
VARIABLE_ORDERS: tuple[str, ...] = ("dfs", "bfs", "arrival")
#: The engine cores of the in-process runtime: the compiled core where it implements a view and
#: the CUDD backend is in use (``auto``, the default), always it (``native``: an error when it is
#: not built), or the Python operators only (``reference``, what Spark's query nodes run).
ENGINE_CORES: tuple[str, ...] = ("auto", "native", "reference")
#: The most query nodes (``--partitions``) a lake may be maintained with: every node keeps its
#: own operator state, so far more nodes than any machine runs only multiplies memory and files.
MAX_PARTITIONS = 1024
#: URI schemes of object stores: the lake root is not checked locally, their errors (missing
#: credentials, no such bucket) come from delta-rs or Spark when the lake is read.
OBJECT_STORE_SCHEMES: tuple[str, ...] = ("s3", "s3a", "gs", "gcs", "abfs", "abfss", "az", "adl")


def check_lake_text(lake: str) -> str:
    """``lake`` if it can name a lake root: not empty (nor blank), no control characters.

    >>> check_lake_text("s3a://bucket/lake")
    's3a://bucket/lake'
    >>> check_lake_text("")
    Traceback (most recent call last):
    ...
    aspen.errors.ConfigError: the lake root is empty; pass --lake PATH or set ASPEN_LAKE
    """
    if not lake or not lake.strip():
        raise ConfigError("the lake root is empty; pass --lake PATH or set ASPEN_LAKE")
    if any(unicodedata.category(ch) == "Cc" for ch in lake):
        raise ConfigError(f"the lake root {lake!r} contains control characters")
    return lake


def lake_root_uri(lake: str) -> str:
    """Normalise a lake root to a URI without a trailing slash: the one form every check of a
    root compares (:func:`normal_uri`, named "the lake root" in its errors).

    >>> lake_root_uri("s3a://bucket/lake/")
    's3a://bucket/lake'
    >>> lake_root_uri("file:///tmp/lake?/../../etc")
    Traceback (most recent call last):
    ...
    aspen.errors.ConfigError: the lake root 'file:///tmp/lake?/../../etc' has a query ('?'); \
name the folder by its path alone
    """
    return normal_uri(check_lake_text(lake), "the lake root")


#: What a URI must not hold outside its path: a query, a fragment, parameters. Each would put
#: part of what names the root outside the path the checks compare (``root?/x`` puts every
#: table in one folder; ``root/x?/../..`` is compared as ``root/x``).
_URI_DELIMITERS = {"?": "a query", "#": "a fragment", ";": "parameters"}


def normal_uri(text: str, what: str = "the path") -> str:
    """``text`` — a local path or a URI naming a folder — as the URI every check compares; else
    :class:`~aspen.errors.ConfigError` in one line naming it as ``what``.

    A local path (relative or absolute) and a ``file://`` URI (percent-decoded first) become the
    ``file://`` URI of their real path: ``~`` expanded (paths only), ``..`` and symbolic links
    resolved. Any other URI (``s3a://``, ``abfss://`` …) is kept as it is, its scheme in lower
    case. A URI (object-store ones too) with a query (``?``), a fragment (``#``), parameters
    (``;``) or a ``.`` or ``..`` segment, percent-encoded or not, is refused; so is a
    ``file://`` URI naming a host.

    >>> normal_uri("/tmp/lakes/../lakes/a/"), normal_uri("S3A://bucket/lakes/a")
    ('file:///tmp/lakes/a', 's3a://bucket/lakes/a')
    >>> normal_uri("file:///tmp/lakes/%2e%2e/etc", "the inbox")
    Traceback (most recent call last):
    ...
    aspen.errors.ConfigError: the inbox 'file:///tmp/lakes/%2e%2e/etc' has a '..' segment; \
name the folder itself
    """
    if not text or not text.strip() or _has_control(text):
        raise ConfigError(f"{what} {text!r} is empty or has control characters")
    parsed = urlparse(text)
    if not parsed.scheme or len(parsed.scheme) == 1:  # a path (or a Windows drive letter)
        return _real_uri(text, what, expand=True)
    for mark, name in _URI_DELIMITERS.items():
        if mark in text:
            raise ConfigError(f"{what} {text!r} has {name} ({mark!r}); name the folder by its "
                              "path alone")
    path = unquote(parsed.path, errors="surrogateescape")
    if _has_control(path):
        raise ConfigError(f"{what} {text!r} has control characters once percent-decoded")
    for segment in (".", ".."):
        if segment in path.replace("\\", "/").split("/"):
            raise ConfigError(f"{what} {text!r} has a {segment!r} segment; name the folder "
                              "itself")
    scheme = parsed.scheme.lower()
    if scheme != "file":
        return f"{scheme}:{text[len(scheme) + 1:]}".rstrip("/")
    if parsed.netloc not in ("", "localhost") or not path.startswith("/"):
        raise ConfigError(f"{what} {text!r} is not a local file URI; write "
                          "file:///absolute/path")
    return _real_uri(path, what, expand=False)


def _has_control(text: str) -> bool:
    return any(unicodedata.category(ch) == "Cc" for ch in text)


def _real_uri(path: str, what: str, *, expand: bool) -> str:
    """The ``file://`` URI of ``path`` with ``..`` and symbolic links resolved."""
    try:
        local = Path(path).expanduser() if expand else Path(path)
        return local.resolve().as_uri()
    except (OSError, RuntimeError, ValueError) as err:  # a link loop, an unreadable folder
        raise ConfigError(f"{what} {path!r} cannot be resolved: {err}") from None


@dataclass(frozen=True)
class Settings:
    """What a command needs to know about its environment."""

    lake: str = field(default_factory=lambda: os.environ.get("ASPEN_LAKE", DEFAULT_LAKE))
    partitions: int = 4
    mode: str = "lazy"
    #: how maintenance orders the BDD variables (:data:`VARIABLE_ORDERS`; ``dfs`` unless the
    #: environment's ``ASPEN_VARIABLE_ORDER`` says otherwise — the others are for comparison)
    variable_order: str = field(
        default_factory=lambda: os.environ.get("ASPEN_VARIABLE_ORDER", VARIABLE_ORDERS[0]))
    #: which engine core the in-process runtime uses (:data:`ENGINE_CORES`; ``auto`` unless the
    #: environment's ``ASPEN_ENGINE_CORE`` says otherwise)
    engine_core: str = field(
        default_factory=lambda: os.environ.get("ASPEN_ENGINE_CORE", ENGINE_CORES[0]))

    def __post_init__(self) -> None:
        if self.partitions < 1:
            raise ConfigError(f"--partitions must be at least 1, got {self.partitions}")
        if self.partitions > MAX_PARTITIONS:
            raise ConfigError(f"--partitions must be at most {MAX_PARTITIONS}, "
                              f"got {self.partitions}")
        if self.mode not in ("lazy", "eager"):
            raise ConfigError(f"--mode must be 'lazy' or 'eager', got {self.mode!r}")
        if self.variable_order not in VARIABLE_ORDERS:
            raise ConfigError(f"ASPEN_VARIABLE_ORDER must be one of {', '.join(VARIABLE_ORDERS)}, "
                              f"got {self.variable_order!r}")
        if self.engine_core not in ENGINE_CORES:
            raise ConfigError(f"ASPEN_ENGINE_CORE must be one of {', '.join(ENGINE_CORES)}, "
                              f"got {self.engine_core!r}")

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
        return unquote(parsed.path) if parsed.scheme == "file" else None


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_lake_root(settings: Settings, *, write: bool) -> None:
    """Fail early, in one line, on a local lake root no command can use: a path that is (or lies
    under) a file, or, for a command that writes (``write``), a lake (or the folder it would be
    created in) that is not writable, including a table folder or its ``_delta_log``. A lake that
    does not exist yet is fine (reading it finds no table; writing creates it). An object-store
    lake is not checked here: its errors come from delta-rs or Spark.

    >>> check_lake_root(Settings(lake="s3://bucket/lake"), write=True)  # not checked locally
    >>> check_lake_root(Settings(lake="/nonexistent/lake"), write=False)
    """
    parsed = urlparse(settings.lake_uri)
    if parsed.scheme != "file":
        return
    root = Path(unquote(parsed.path))
    found = _nearest_existing(root)
    if not found.is_dir():
        what = "is a file" if found == root else f"lies under the file {found}"
        raise LakeError(f"the lake {root} {what}, not a directory")
    if not write:
        return
    folders = [found]
    if found == root:  # the tables and their logs are written into as well
        for table in sorted(p for p in root.iterdir() if (p / "_delta_log").is_dir()):
            folders += [table, table / "_delta_log"]
    for folder in folders:
        if not os.access(folder, os.W_OK | os.X_OK):
            where = "" if folder == root else f" ({folder} is not)"
            raise LakeError(f"the lake {root} is not writable{where}; this command writes to it")
