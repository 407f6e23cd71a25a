"""The dashboard's server process: Streamlit, plus a thread that decodes the lake's provenance
before anyone asks.

``aspen dashboard`` runs ``python -m aspen.cli.dashboard_server APP [streamlit options] --
--lake URI``. The warming thread (:func:`aspen.pipeline.lake_provenance.keep_warm`) decodes
every view's provenance when the server starts, and whenever a batch commits the rows it
changed, into the process-wide cache the pages read
(:func:`aspen.pipeline.lake_provenance.shared_provenance`), so later What-if and Why answers come
from memory; a question asked meanwhile decodes only the rows it needs, without waiting for the
thread. ``ASPEN_DASHBOARD_WARM=0`` turns the thread off (questions then decode their rows only).

>>> lake_argument(["app.py", "--server.port", "1", "--", "--lake", "/tmp/l"])
'/tmp/l'
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence

from aspen.pipeline.lake_provenance import keep_warm
from aspen.settings import DEFAULT_LAKE, Settings

__all__ = ["WARM_EVERY_S", "lake_argument", "main"]

#: How often the warming thread looks for a new lake version (seconds).
WARM_EVERY_S = 2.0


def lake_argument(argv: Sequence[str]) -> str:
    """The lake after ``--`` (``--lake URI``), else ``ASPEN_LAKE``, else the default."""
    args = list(argv)
    script_args = args[args.index("--") + 1:] if "--" in args else []
    if "--lake" in script_args[:-1]:
        return script_args[script_args.index("--lake") + 1]
    return os.environ.get("ASPEN_LAKE") or DEFAULT_LAKE


def main(argv: Sequence[str] | None = None) -> None:
    """Start the warming thread, then Streamlit's ``run`` in this process (it never returns:
    Streamlit exits the process when it stops)."""
    args = list(sys.argv[1:] if argv is None else argv)
    # imported before the thread starts: plotly's lazy imports (inside Streamlit's and the
    # pages') fail when another thread is importing numpy or pandas at the same moment
    import deltalake  # noqa: F401
    import numpy  # noqa: F401
    import pandas  # noqa: F401
    import plotly.graph_objects  # noqa: F401
    from streamlit.web.cli import main as streamlit_main

    if os.environ.get("ASPEN_DASHBOARD_WARM", "1") != "0":
        settings = Settings(lake=lake_argument(args))
        threading.Thread(target=keep_warm, args=(settings, WARM_EVERY_S, threading.Event()),
                         name="aspen-provenance-warm", daemon=True).start()
    sys.argv = ["streamlit", "run", *args]
    streamlit_main(prog_name="streamlit")


if __name__ == "__main__":
    main()
