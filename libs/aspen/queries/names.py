"""Names of registered queries and of the tables they own.

A query's name is an identifier (it names its result table ``q_<name>``); inside a run, the
column ``column`` of relation ``alias`` is called ``alias__column`` (:func:`flat_name`), so the
joined rows of several relations (a table joined with itself as well) never hold two columns
of one name.

>>> check_name("big_links"), result_table("big_links"), flat_name("a", "src")
('big_links', 'q_big_links', 'a__src')
>>> check_name("2fast")
Traceback (most recent call last):
...
aspen.errors.ConfigError: query name '2fast' must be an identifier (a letter or _, then \
letters, digits or _; at most 64 characters)
"""

from __future__ import annotations

import re

from aspen.errors import ConfigError

__all__ = ["RESULT_PREFIX", "check_name", "flat_name", "is_identifier", "result_table",
           "split_flat_name"]

#: A query ``x`` writes its result to the table ``q_x``.
RESULT_PREFIX = "q_"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_SEPARATOR = "__"


def check_name(name: str) -> str:
    """``name`` if it is a valid query name, else :class:`~aspen.errors.ConfigError`."""
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise ConfigError(f"query name {name!r} must be an identifier (a letter or _, then "
                          "letters, digits or _; at most 64 characters)")
    return name


def is_identifier(text: str) -> bool:
    """Whether ``text`` is an identifier (a valid query, alias or output column name).

    >>> is_identifier("n_links"), is_identifier("my col")
    (True, False)
    """
    return bool(_IDENTIFIER.fullmatch(text))


def result_table(name: str) -> str:
    """The result table of query ``name``."""
    return RESULT_PREFIX + check_name(name)


def flat_name(alias: str, column: str) -> str:
    """The name of ``alias.column`` in a run's joined rows."""
    return f"{alias}{_SEPARATOR}{column}"


def split_flat_name(name: str) -> tuple[str, str] | None:
    """``(alias, column)`` of a :func:`flat_name`, or None for another name.

    >>> split_flat_name("a__src"), split_flat_name("count")
    (('a', 'src'), None)
    """
    alias, sep, column = name.partition(_SEPARATOR)
    return (alias, column) if sep and alias and column else None
