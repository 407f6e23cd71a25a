"""Make the shared helpers in ``provenance_testkit.py`` importable from these tests."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
