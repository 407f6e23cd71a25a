"""Spark plumbing: the session factory (Delta jars from local files, master from the
environment)."""

from __future__ import annotations

__all__: list[str] = []
