"""The in-process apply's tuple keys: the JSON text Spark's ``to_json(array(...))`` writes
(checked against Spark itself in tests/properties/test_apply_paths_agree.py)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from aspen.lake.apply_local import key_json

#: Characters a JSON string may hold unescaped (no control character, quote or backslash).
_PLAIN = st.characters(exclude_categories=("Cs", "Cc"), exclude_characters='"\\')


def test_keys_have_no_spaces_and_keep_non_ascii_characters() -> None:
    assert key_json(["a", "b"]) == '["a","b"]'
    assert key_json(["s1"]) == '["s1"]'
    assert key_json(["né", "日本", "🌲"]) == '["né","日本","🌲"]'
    assert key_json([]) == "[]"


def test_quotes_backslashes_and_control_characters_are_escaped_as_jackson_does() -> None:
    assert key_json(['say "hi"']) == '["say \\"hi\\""]'
    assert key_json(["a\\b"]) == '["a\\\\b"]'
    assert key_json(["\b\t\n\f\r"]) == '["\\b\\t\\n\\f\\r"]'
    assert key_json(["\x00\x1f"]) == '["\\u0000\\u001F"]'  # upper-case hex, as Jackson writes
    assert key_json(["\x7f", "\u2028", "/"]) == '["\x7f","\u2028","/"]'  # not escaped


def test_a_null_key_column_is_null() -> None:
    assert key_json([None, "b"]) == '[null,"b"]'


@given(st.lists(st.text(_PLAIN, max_size=12), min_size=1, max_size=3))
def test_keys_without_escapes_are_compact_json(values: list[str]) -> None:
    text = key_json(values)
    assert text == json.dumps(values, ensure_ascii=False, separators=(",", ":"))


@given(st.lists(st.one_of(st.none(), st.text(max_size=12)), min_size=1, max_size=3))
def test_every_key_parses_back_to_its_values(values: list[str | None]) -> None:
    assert json.loads(key_json(values)) == values
