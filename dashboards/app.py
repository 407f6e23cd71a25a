"""Aspen dashboard: ``streamlit run dashboards/app.py -- --lake PATH`` (or ``aspen dashboard``).

Reads the Delta lake directly through delta-rs (no JVM). The lake root comes from
``--lake`` after ``--``, else ``ASPEN_LAKE``, else ``./lakehouse``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # `streamlit run` adds it; AppTest does not
    sys.path.insert(0, str(HERE))

from lakeview import LAKE_KEY, resolve_lake  # noqa: E402

st.set_page_config(page_title="Aspen", layout="wide")
if not st.session_state.get(LAKE_KEY):
    st.session_state[LAKE_KEY] = resolve_lake(sys.argv[1:])

navigation = st.navigation(
    [
        st.Page(HERE / "pages" / "overview.py", title="Overview", default=True),
        st.Page(HERE / "pages" / "network.py", title="Network"),
        st.Page(HERE / "pages" / "quarantine.py", title="Quarantine"),
        st.Page(HERE / "pages" / "why.py", title="Why"),
        st.Page(HERE / "pages" / "what_if.py", title="What if"),
        st.Page(HERE / "pages" / "views.py", title="Views"),
        st.Page(HERE / "pages" / "health.py", title="Pipeline health"),
    ]
)
st.sidebar.caption(f"Lake: `{st.session_state[LAKE_KEY]}`")
navigation.run()
