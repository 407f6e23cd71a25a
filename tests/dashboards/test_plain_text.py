"""The console's one text cleaner for pictures (``lakeview.plain``): whatever an id holds, plotly
shows its characters, on one line, with no markup and no math."""

from __future__ import annotations

import html
import sys
import unicodedata
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

DASHBOARDS = Path(__file__).resolve().parents[2] / "dashboards"
sys.path.insert(0, str(DASHBOARDS))
import lakeview  # noqa: E402
import regionmap  # noqa: E402
import topomap  # noqa: E402


@given(st.text())
def test_plain_text_has_no_markup_math_or_control_characters(value: str) -> None:
    shown = lakeview.plain(value)
    assert not {"<", ">", "$"} & set(shown)
    assert not any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in shown)
    # undoing the entities gives the id back, control characters written as escapes
    unescaped = html.unescape(shown)
    if value.isprintable():
        assert unescaped == value


def test_the_pictures_use_the_one_cleaner() -> None:
    assert topomap.plain is lakeview.plain and regionmap.plain is lakeview.plain
