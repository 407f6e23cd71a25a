"""The provenance-aware operators, plans and the in-process runtime (no Spark)."""
