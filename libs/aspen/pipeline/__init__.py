"""Orchestration over the lake: local-runtime maintenance, view tables, lake-side explanations."""
