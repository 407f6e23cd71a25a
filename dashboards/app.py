"""Aspen dashboard: ``streamlit run dashboards/app.py --server.address 127.0.0.1 -- --lake PATH``
(or ``aspen dashboard``).

Reads the Delta lake directly through delta-rs (no JVM), and never writes to it. The lake root
comes from ``--lake`` after ``--``, else ``ASPEN_LAKE``, else ``./lakehouse``; every page
resolves it itself (:func:`lakeview.current_lake`), so a page opened first by a deep link reads
the same lake. See docs/operating-the-dashboard.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # `streamlit run` adds it; AppTest does not
    sys.path.insert(0, str(HERE))

from lakeview import current_lake, lake_name, text  # noqa: E402

st.set_page_config(page_title="Aspen", layout="wide")

navigation = st.navigation(
    [
        st.Page(HERE / "pages" / "overview.py", title="Overview", default=True),
        st.Page(HERE / "pages" / "network.py", title="Network"),
        st.Page(HERE / "pages" / "quarantine.py", title="Quarantine"),
        st.Page(HERE / "pages" / "why.py", title="Why"),
        st.Page(HERE / "pages" / "what_if.py", title="What if"),
        st.Page(HERE / "pages" / "views.py", title="Views"),
        st.Page(HERE / "pages" / "sensors.py", title="Sensor readings"),
        st.Page(HERE / "pages" / "queries.py", title="Queries"),
        st.Page(HERE / "pages" / "health.py", title="Pipeline health"),
    ]
)
# the lake's name only: the server's file-system layout is none of the reader's business
st.sidebar.caption(f"Lake: {text(lake_name(current_lake()))} (read-only)")
navigation.run()
