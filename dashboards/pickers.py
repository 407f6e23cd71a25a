"""Pickers whose choice is in the page's address: a select box that starts on the option a
query parameter names (else the first), warns when the parameter names none of them, and writes
the choice back to the address, so a link to the page shows the same thing.

>>> pick_from_address("Rule", ["r1"], param="rule", key="rule",
...                   unknown=lambda wanted: f"no rule {wanted}")  # doctest: +SKIP
'r1'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

__all__ = ["pick_from_address"]


def pick_from_address(label: str, options: Sequence[str], *, param: str, key: str,
                      unknown: Callable[[str], str],
                      format_func: Callable[[str], str] = str) -> str:
    """The option of ``options`` (not empty) the query parameter ``param`` names, else the
    first, picked with a select box (``label``, widget ``key``, shown by ``format_func``); a
    warning ``unknown(wanted)`` (Markdown: quote lake text with ``lakeview.text``) when the
    parameter names none of them. The choice is written back to ``param``."""
    names = list(options)
    wanted = st.query_params.get(param)
    if wanted is not None and wanted not in names:
        st.warning(unknown(wanted))
    name = st.selectbox(label, names, index=names.index(wanted) if wanted in names else 0,
                        key=key, format_func=format_func)
    st.query_params[param] = name  # the address names what is shown, for a link to it
    return name
