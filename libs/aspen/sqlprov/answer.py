"""A query's answer: its columns and rows, and with provenance each row's formula.

>>> from aspen.provenance.bdd import ProvenanceManager
>>> m = ProvenanceManager()
>>> a = SqlAnswer(("src",), [("n1",)], m, [m.var("link:n1:n2")])
>>> a.as_json()
[{'values': {'src': 'n1'}, 'provenance': {'var': 'link:n1:n2'}}]
>>> a.why(0).critical
['link:n1:n2']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aspen.errors import ConfigError
from aspen.provenance.bdd import Formula, ProvenanceManager
from aspen.sqlprov.render import to_json
from aspen.sqlprov.why import Why, why

__all__ = ["SqlAnswer"]


def _plain(value: Any) -> Any:
    """A cell as JSON can hold it (lists for paths, text for times and bytes)."""
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        return _plain(value.tolist())
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


@dataclass
class SqlAnswer:
    """The rows of a query (``columns`` names them); with provenance, ``formulas[i]`` is row
    i's formula in ``manager``. ``notes`` say where a formula is not the exact condition of
    the row (HAVING other than COUNT(*) >= k, LIMIT); ``sql`` holds the statements that ran."""

    columns: tuple[str, ...]
    rows: list[tuple]
    manager: ProvenanceManager | None = None
    formulas: list[Formula] | None = None
    notes: tuple[str, ...] = ()
    sql: dict[str, str] = field(default_factory=dict)
    engine: str = "duckdb"

    @property
    def exact(self) -> bool:
        """Whether every formula means exactly when its row is in the answer."""
        return not self.notes

    def provenance(self, index: int) -> Any:
        """Row ``index``'s formula as JSON (:func:`aspen.sqlprov.render.to_json`)."""
        self._check(index)
        assert self.manager is not None and self.formulas is not None
        return to_json(self.manager, self.formulas[index])

    def why(self, index: int, limit: int | None = None) -> Why:
        """Row ``index``'s minimal witness sets (at most ``limit``) and critical tuples."""
        self._check(index)
        assert self.manager is not None and self.formulas is not None
        return why(self.manager, self.formulas[index], limit)

    def _check(self, index: int) -> None:
        if self.formulas is None:
            raise ConfigError("the answer has no provenance: run the query with provenance")
        if not 0 <= index < len(self.rows):
            raise ConfigError(f"no row {index}: the answer has {len(self.rows)} row(s), "
                              f"numbered 0 to {len(self.rows) - 1}")

    def values(self, index: int) -> dict[str, Any]:
        """Row ``index`` by column name, as JSON can hold it."""
        return {c: _plain(v) for c, v in zip(self.columns, self.rows[index], strict=True)}

    def as_json(self) -> list[dict[str, Any]]:
        """One object per row: ``values``, and ``provenance`` when there are formulas (with
        ``"exact": false`` when a note applies)."""
        out = []
        for i in range(len(self.rows)):
            row: dict[str, Any] = {"values": self.values(i)}
            if self.formulas is not None:
                row["provenance"] = self.provenance(i)
                if self.notes:
                    row["exact"] = False
            out.append(row)
        return out
