"""The Delta lake layer: table schemas, record validation, ingestion with quarantine, apply."""

from __future__ import annotations

__all__: list[str] = []
