"""The CLI's boundary: a bad lake root, an unreachable object store or a library's error is one
line on stderr and exit code 2, never a traceback; option bounds; control characters escaped.

No Spark: every command here fails (or prints) before Spark would start. The object-store cases
run without network: no credentials anywhere, the instance metadata service off, and an
endpoint that delta-rs refuses to use, so they fail at once.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from aspen.cli import _guard
from aspen.cli.main import main
from aspen.errors import LakeError
from aspen.settings import MAX_PARTITIONS, Settings, check_lake_root

S3_LAKE = "s3://nonexistent-bucket/lake"


def _one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run ``aspen ARGV``; assert exit 2 and one line on stderr; return that line."""
    try:
        code = main(argv)
    except SystemExit as exit_info:
        code = exit_info.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    return err.strip()


@pytest.fixture
def update_file(tmp_path: Path) -> Path:
    path = tmp_path / "links.jsonl"
    path.write_text('{"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": 1}\n')
    return path


# -- the lake root ------------------------------------------------------------------------------


def test_an_empty_lake_is_an_error_not_the_default(capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    line = _one_line(capsys, ["--lake", "", "show", "reachable"])
    assert line == "aspen show: the lake root is empty; pass --lake PATH or set ASPEN_LAKE"
    monkeypatch.setenv("ASPEN_LAKE", "  ")
    assert "the lake root is empty" in _one_line(capsys, ["verify"])
    assert not (tmp_path / "lakehouse").exists()


def test_a_lake_with_control_characters_is_refused(capsys) -> None:
    line = _one_line(capsys, ["--lake", "/tmp/a\nb", "show", "reachable"])
    assert line == "aspen show: the lake root '/tmp/a\\nb' contains control characters"


@pytest.mark.parametrize("argv", [
    ["show", "reachable"], ["verify"], ["what-if", "--delete", "link:a:b"], ["maintain"],
    ["maintain", "--stop"], ["expire"], ["check"], ["explain", "reachable", "a", "b"],
])
def test_a_lake_that_is_a_file(capsys, tmp_path, argv) -> None:
    lake = tmp_path / "lake.txt"
    lake.write_text("not a lake")
    line = _one_line(capsys, ["--lake", str(lake), *argv])
    assert line.endswith(f"the lake {lake} is a file, not a directory")


def test_a_lake_under_a_file(capsys, tmp_path, update_file) -> None:
    (tmp_path / "file").write_text("")
    line = _one_line(capsys, ["--lake", str(tmp_path / "file" / "lake"), "ingest",
                              str(update_file)])
    assert line == (f"aspen ingest: the lake {tmp_path / 'file' / 'lake'} lies under the file "
                    f"{tmp_path / 'file'}, not a directory")


@pytest.fixture
def read_only_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A lake with one table whose folders cannot be written: chmod, or (as root, whom chmod
    does not stop) ``os.access`` saying so for everything under it."""
    from aspen.lake.deltars import write_table

    lake = tmp_path / "lake"
    write_table(Settings(lake=str(lake)), "reachable", pd.DataFrame({"src": ["a"], "dst": ["b"]}))
    if os.geteuid() == 0:
        real_access = os.access

        def access(path: object, mode: int, **kwargs: object) -> bool:
            if mode & os.W_OK and Path(str(path)).is_relative_to(lake):
                return False
            return real_access(path, mode, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "access", access)
        yield lake
        return
    folders = [lake, *[p for p in lake.rglob("*") if p.is_dir()]]
    for folder in folders:
        folder.chmod(0o555)
    yield lake
    for folder in folders:
        folder.chmod(0o755)


@pytest.mark.parametrize("argv", [["maintain"], ["maintain", "--stop"], ["expire"], ["check"],
                                  ["ingest", "UPDATES"]])
def test_a_read_only_lake_fails_a_writing_command_in_one_line(
    capsys, read_only_lake, update_file, argv
) -> None:
    argv = [str(update_file) if a == "UPDATES" else a for a in argv]
    line = _one_line(capsys, ["--lake", str(read_only_lake), *argv])
    assert f"the lake {read_only_lake} is not writable" in line
    assert "this command writes to it" in line


def test_a_read_only_lake_is_fine_for_reading(capsys, read_only_lake) -> None:
    line = _one_line(capsys, ["--lake", str(read_only_lake), "show", "reachable"])
    assert "not writable" not in line and "no committed batch" in line


def test_a_read_only_table_log_counts(tmp_path, monkeypatch) -> None:
    from aspen.lake.deltars import write_table

    lake = tmp_path / "lake"
    write_table(Settings(lake=str(lake)), "link", pd.DataFrame({"src": ["a"]}))
    log = lake / "link" / "_delta_log"
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != log
                        and real_access(path, mode))
    with pytest.raises(LakeError, match=f"not writable \\({log} is not\\)"):
        check_lake_root(Settings(lake=str(lake)), write=True)
    check_lake_root(Settings(lake=str(lake)), write=False)


def test_which_commands_write() -> None:
    def writes(command: str, **options: object) -> bool:
        return _guard.writes_lake(argparse.Namespace(command=command, **options))

    assert all(writes(c) for c in ("ingest", "maintain", "expire", "demo"))
    assert writes("check", write=True) and not writes("check", write=False)
    assert writes("query", action="run") and not writes("query", action="list")
    assert not any(writes(c) for c in ("show", "verify", "what-if", "explain", "dashboard"))


# -- object stores and library errors ------------------------------------------------------------


@pytest.fixture
def no_cloud(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No AWS credentials from anywhere and no endpoint delta-rs will use: it fails at once."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # plain http: refused too


@pytest.mark.timeout(60)
@pytest.mark.parametrize("argv", [
    ["show", "reachable"], ["verify"], ["what-if", "--delete", "link:a:b"],
    ["maintain", "--stop"], ["maintain"], ["ingest", "UPDATES"],
])
def test_an_unreachable_object_store_is_one_line(capsys, no_cloud, update_file, argv) -> None:
    argv = [str(update_file) if a == "UPDATES" else a for a in argv]
    line = _one_line(capsys, ["--lake", S3_LAKE, *argv])
    assert line.startswith(f"aspen {argv[0]}: lake {S3_LAKE}: ")
    assert "\x1b" not in line and "↳" not in line


class Py4JJavaError(Exception):
    """Stands in for py4j's error (matched by class name): its str is a Java stack trace."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.java_exception = type("JavaObject", (), {"toString": lambda _: message.split(
            "\n", 1)[1].removeprefix(": ").split("\n", 1)[0]})()


class PanicException(BaseException):
    """Stands in for pyo3's ``PanicException`` (a ``BaseException``, matched by class name)."""


@pytest.mark.parametrize(("error", "cause"), [
    (Py4JJavaError("An error occurred while calling o42.save.\n: java.nio.file."
                   "AccessDeniedException: /lake/updates\n\tat sun.nio.fs.Unix(x.java:90)"),
     "java.nio.file.AccessDeniedException: /lake/updates"),
    (PanicException("called `Result::unwrap()` on an `Err` value"),
     "called `Result::unwrap()` on an `Err` value"),
    (PermissionError(13, "Permission denied"), "[Errno 13] Permission denied"),
])
def test_library_errors_at_the_boundary_are_one_line(capsys, monkeypatch, tmp_path, error,
                                                     cause) -> None:
    from aspen.cli import show

    def fail(args: argparse.Namespace, settings: Settings) -> int:
        raise error

    monkeypatch.setattr(show, "run", fail)
    line = _one_line(capsys, ["--lake", str(tmp_path / "lake"), "show", "reachable"])
    assert line == f"aspen show: lake {(tmp_path / 'lake').as_uri()}: {cause}"


def test_deltalake_errors_are_one_line_and_debug_shows_the_traceback(capsys, monkeypatch,
                                                                     tmp_path) -> None:
    from deltalake.exceptions import DeltaError

    from aspen.cli import show

    def fail(args: argparse.Namespace, settings: Settings) -> int:
        raise DeltaError("Kernel error\n  ↳ \x1b[31mthe root cause\x1b[0m")

    monkeypatch.setattr(show, "run", fail)
    argv = ["--lake", str(tmp_path / "lake"), "show", "reachable"]
    assert _one_line(capsys, argv).endswith(": Kernel error (the root cause)")
    monkeypatch.setenv("ASPEN_DEBUG", "1")
    with pytest.raises(DeltaError):
        main(argv)


def test_a_bug_keeps_its_traceback(monkeypatch, tmp_path) -> None:
    from aspen.cli import show

    def fail(args: argparse.Namespace, settings: Settings) -> int:
        raise KeyError("a bug")

    monkeypatch.setattr(show, "run", fail)
    with pytest.raises(KeyError):
        main(["--lake", str(tmp_path / "lake"), "show", "reachable"])


# -- option bounds --------------------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "message"), [
    (["maintain", "--partitions", "1000000000"],
     f"--partitions must be at most {MAX_PARTITIONS}, got 1000000000"),
    (["maintain", "--partitions", str(MAX_PARTITIONS + 1)],
     f"at most {MAX_PARTITIONS}, got {MAX_PARTITIONS + 1}"),
    (["maintain", "--runtime", "spark", "--hosts", "1000000000"],
     f"--hosts must be at most {MAX_PARTITIONS}, got 1000000000"),
    (["maintain", "--runtime", "spark", "--hosts", "-3"], "--hosts must be at least 1, got -3"),
    (["show", "reachable", "--limit", "-5"], "--limit must not be negative, got -5"),
    (["explain", "reachable", "a", "--limit", "-1"], "--limit must not be negative, got -1"),
    (["verify", "--show", "-2"], "--show must not be negative, got -2"),
])
def test_option_bounds(capsys, tmp_path, argv, message) -> None:
    line = _one_line(capsys, ["--lake", str(tmp_path / "lake"), *argv])
    assert line.endswith(message)
    assert not (tmp_path / "lake").exists()  # refused before anything was written


def test_the_largest_partition_count_is_accepted() -> None:
    assert Settings(lake="/l", partitions=MAX_PARTITIONS).partitions == MAX_PARTITIONS


# -- control characters in output -----------------------------------------------------------------


@pytest.fixture
def control_lake(tmp_path: Path) -> Path:
    """A committed ``reachable`` view with a pair whose ids hold control characters."""
    from aspen.catalog import VIEWS
    from aspen.lake.deltars import write_table
    from aspen.pipeline import ledger
    from aspen.pipeline.view_tables import view_frame
    from aspen.provenance.bdd import ProvenanceManager

    settings = Settings(lake=str(tmp_path / "lake"))
    manager = ProvenanceManager()
    formulas = {("a\x1b[2Jb", "c\nd\u202e"): manager.var("v1")}
    write_table(settings, "reachable", view_frame("reachable", formulas, manager, batch_id=1))
    ledger.commit(settings, ledger.LedgerEntry(1, 1, "local", 1, "lazy"), 0, 0, VIEWS)
    return tmp_path / "lake"


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_show_escapes_control_characters(capsys, control_lake, fmt) -> None:
    assert main(["--lake", str(control_lake), "show", "reachable", "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out
    assert "a\\x1b[2Jb" in out and "c\\nd\\u202e" in out
    assert len(out.strip().splitlines()) == (3 if fmt == "table" else 2)


def test_show_json_keeps_the_values(capsys, control_lake) -> None:
    assert main(["--lake", str(control_lake), "show", "reachable", "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert json.loads(out) == [{"src": "a\x1b[2Jb", "dst": "c\nd\u202e"}]
