"""Make the shared helpers here (``join_graphs.py``, ``fig21.py``) importable from these tests;
tests elsewhere insert this folder into ``sys.path`` themselves (as tests/engine does for
tests/unit/provenance)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
