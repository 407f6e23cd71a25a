"""Baselines: from-scratch evaluation (the oracle), DRed and relative provenance."""

from __future__ import annotations

__all__ = ["scratch", "dred", "relative"]
