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


def commit_views(lake: str) -> None:
    """Commit a maintained batch over the view tables as they are now (a ledger row recording
    their versions): the dashboard reads views as of the last committed batch."""
    from aspen.catalog import VIEWS
    from aspen.lake.committed import committed_batch
    from aspen.pipeline import ledger
    from aspen.settings import Settings

    settings = Settings(lake=lake)
    batch = committed_batch(settings) + 1
    ledger.commit(settings, ledger.LedgerEntry(batch, batch, "local", 1, "lazy"), 0, 0, VIEWS)
