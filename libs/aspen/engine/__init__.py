"""The provenance-aware operators and plans, without Spark (the runtimes that run them:
:mod:`aspen.runtime`)."""
