"""The compiled engine core (``libs/aspen_core``, Rust, loaded with ctypes): whole recursive
views as fused kernels over the same CUDD manager as the Python operators, which remain the
reference implementation (docs/decisions/0053-compiled-core.md)."""

from __future__ import annotations

from aspen.engine.native.closure import STATS, NativeClosure
from aspen.engine.native.library import core_available
from aspen.engine.native.paths import NativePaths
from aspen.engine.native.regions import NativeRegions

__all__ = ["STATS", "NativeClosure", "NativePaths", "NativeRegions", "core_available"]
