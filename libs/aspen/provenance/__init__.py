"""Absorption provenance: BDD manager, variable registry, codec, explanations, variable order."""

from __future__ import annotations

from aspen.provenance.bdd import ProvenanceManager, decode, default_backend, encode

__all__ = ["ProvenanceManager", "decode", "default_backend", "encode"]
