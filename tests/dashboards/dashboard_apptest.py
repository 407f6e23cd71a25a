"""Opening one page of the dashboard in Streamlit's AppTest, as the dashboard tests do."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from aspen.cli.dashboard import app_path


def open_page(path: str | None = None) -> AppTest:
    """Run the app, switch to ``path`` (the default page when None), and check it raised nothing."""
    app = AppTest.from_file(str(app_path()), default_timeout=60).run()
    if path is not None:
        app.switch_page(path).run()
    assert not app.exception, app.exception
    return app
