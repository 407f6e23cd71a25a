"""The ``lake`` and ``inbox`` Params of a DAG run: the configured ones, or under an allowed root,
and nothing that could point a task elsewhere (no Airflow needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aspen.errors import ConfigError
from aspen.pipeline.launch import ALLOWED_ROOTS_ENV, allowed_roots, check_run_path


@pytest.fixture(autouse=True)
def no_roots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ALLOWED_ROOTS_ENV, raising=False)


def test_the_configured_lake_is_allowed(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    assert check_run_path("lake", str(lake), str(lake)) == lake.as_uri()
    assert check_run_path("lake", lake.as_uri(), str(lake)) == lake.as_uri()
    assert check_run_path("lake", f"{lake}/", str(lake)) == lake.as_uri()


def test_without_roots_any_other_lake_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"only the configured '.*lake' \(set "
                                          f"{ALLOWED_ROOTS_ENV} to allow others\\)"):
        check_run_path("lake", str(tmp_path / "other"), str(tmp_path / "lake"))
    with pytest.raises(ConfigError, match="none configured"):
        check_run_path("inbox", str(tmp_path / "inbox"), None)


def test_a_lake_under_an_allowed_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOWED_ROOTS_ENV, f"{tmp_path / 'lakes'}, s3a://bucket/lakes/")
    assert allowed_roots() == [(tmp_path / "lakes").as_uri(), "s3a://bucket/lakes"]
    assert check_run_path("lake", str(tmp_path / "lakes" / "a"), None).endswith("/lakes/a")
    assert check_run_path("lake", "s3a://bucket/lakes/b", None) == "s3a://bucket/lakes/b"
    for outside in (str(tmp_path / "lakes-evil"), str(tmp_path), "s3a://bucket/other",
                    "s3a://bucket/lakesX", "/etc"):
        with pytest.raises(ConfigError, match="is not allowed"):
            check_run_path("lake", outside, None)


def test_a_symbolic_link_out_of_a_root_is_refused(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lakes").mkdir()
    (tmp_path / "lakes" / "escape").symlink_to(tmp_path / "elsewhere")
    monkeypatch.setenv(ALLOWED_ROOTS_ENV, str(tmp_path / "lakes"))
    with pytest.raises(ConfigError, match="is not allowed"):
        check_run_path("lake", str(tmp_path / "lakes" / "escape"), None)


@pytest.mark.parametrize(("value", "message"), [
    ("", "is empty or has control characters"),
    ("   ", "is empty or has control characters"),
    ("/srv/lakes/a\nb", "is empty or has control characters"),
    ("/srv/lakes/a\x00", "is empty or has control characters"),
    ("/srv/lakes/../etc", "has a '..' segment"),
    ("/srv/lakes/%2e%2e/etc", "has a '..' segment"),
    ("s3a://bucket/lakes/../x", "has a '..' segment"),
    (["/srv/lakes/a"], "must be a string"),
    (7, "must be a string"),
])
def test_malformed_params_are_refused(monkeypatch: pytest.MonkeyPatch, value: object,
                                      message: str) -> None:
    monkeypatch.setenv(ALLOWED_ROOTS_ENV, "/srv/lakes")
    with pytest.raises(ConfigError, match=message) as raised:
        check_run_path("lake", value, "/srv/lakes/a")
    assert "\n" not in str(raised.value)  # one line, whatever the Param holds
