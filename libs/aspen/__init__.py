"""Aspen: recursive views over network and sensor update streams with absorption provenance."""

from __future__ import annotations

__all__ = ["__version__"]
__version__ = "0.1.0"
