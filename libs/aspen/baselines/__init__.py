"""Baselines: from-scratch evaluation (each view's oracle, and all of them), DRed and relative
provenance."""

from __future__ import annotations

__all__ = ["oracles", "scratch", "dred", "relative"]
