"""The ``aspen`` command line: one module per command, each with ``register(subparsers)``."""
