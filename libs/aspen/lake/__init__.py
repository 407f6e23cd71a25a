"""The Delta lake layer: table schemas, record validation, ingestion with quarantine, apply, and
reads and small writes without a JVM (delta-rs)."""

from __future__ import annotations

__all__: list[str] = []
