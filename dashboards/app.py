"""Aspen dashboard: ``streamlit run dashboards/app.py --server.address 127.0.0.1 -- --lake PATH``
(or ``aspen dashboard``).

Reads the Delta lake directly through delta-rs (no JVM), and never writes to it. The lake root
comes from ``--lake`` after ``--``, else ``ASPEN_LAKE``, else ``./lakehouse``; every page
resolves it itself (:func:`lakeview.current_lake`), so a page opened first by a deep link reads
the same lake. The pages and their order are :data:`page_registry.PAGES`. See
docs/operating-the-dashboard.md.

While a page is open, a fragment in the sidebar checks every few seconds (``lakewatch.REFRESH_S``,
``ASPEN_DASHBOARD_REFRESH_S`` overrides it, 0 turns it off) whether a table of the lake got a new
Delta version since the page was drawn (:func:`lakewatch.lake_moved`) and only then reruns the
whole app, so an unchanged lake never redraws.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import streamlit as st

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # `streamlit run` adds it; AppTest does not
    sys.path.insert(0, str(HERE))

import pandas as pd  # noqa: E402
from lakeview import current_lake, in_foreground, lake_name, text  # noqa: E402
from lakewatch import lake_fingerprint, lake_moved, refresh_interval  # noqa: E402
from page_registry import PAGES, default_page, page_file  # noqa: E402
from status import clock_text  # noqa: E402

#: Keys of st.session_state: the lake's fingerprint when the page was drawn, and when.
FINGERPRINT_KEY = "aspen_lake_fingerprint"
DRAWN_AT_KEY = "aspen_drawn_at"
#: Set by a full run: the fragment's first call in that run has nothing new to check.
_JUST_DRAWN_KEY = "aspen_just_drawn"

st.set_page_config(page_title="Aspen", layout="wide")
# Streamlit asks once per process, at the first element, whether it runs in a REPL by walking
# every frame's source file (0.3 s of a fresh server's first page); this app runs under
# `streamlit run`, so the answer is known: skip the walk (the flag is its own "asked already")
with contextlib.suppress(ImportError, AttributeError):
    import streamlit.delta_generator as _generator

    _generator._use_warning_has_been_displayed = True

navigation = st.navigation([
    st.Page(HERE / page_file(page), title=page.title, icon=page.icon,
            default=page == default_page())
    for page in PAGES
])
settings = current_lake()
# the lake's name only: the server's file-system layout is none of the reader's business
st.sidebar.caption(f"Lake: {text(lake_name(settings))} (read-only)")
# taken before the page draws: a commit landing while it draws reruns it once more
st.session_state[FINGERPRINT_KEY] = lake_fingerprint(settings)
st.session_state[DRAWN_AT_KEY] = pd.Timestamp.now(tz="UTC")
st.session_state[_JUST_DRAWN_KEY] = True
interval = refresh_interval(os.environ)


def _updated_note() -> None:
    drawn = clock_text(st.session_state.get(DRAWN_AT_KEY))
    every = "" if interval is None else f"; checks the lake every {interval:g} s"
    st.caption(f"Updated {drawn} UTC{every}")


@st.fragment(run_every=interval)
def _watch_the_lake() -> None:
    """Rerun the whole app when the lake moved since the page was drawn; else redraw only the
    note (nothing else on the page changes, so nothing flickers)."""
    if not st.session_state.pop(_JUST_DRAWN_KEY, False) and lake_moved(
        st.session_state.get(FINGERPRINT_KEY), current_lake()
    ):
        st.rerun(scope="app")
    _updated_note()


with st.sidebar:
    if interval is None:
        _updated_note()
    else:
        _watch_the_lake()
with in_foreground():  # the server's provenance warm-up waits while the page draws
    navigation.run()
