"""The maintainer in process (:mod:`aspen.pipeline.maintainer`, its process
:mod:`aspen.pipeline.maintainer_main`) on tiny lakes, local runtime: one batch under the lease
with its queries handed to a worker once the lease is released, a rebuild under the lease, a
follower stopped by its event or by the lake's stop request, and the flag checks."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aspen.errors import ConfigError
from aspen.lake.committed import read_committed
from aspen.lake.ingest import ingest_files
from aspen.lake.lease import current_holder
from aspen.pipeline import ledger
from aspen.pipeline.maintainer import (
    MaintainOptions,
    ask_follower_to_stop,
    maintain_once,
    run_follower,
)
from aspen.pipeline.maintainer_main import build_parser, main, options_from, sigterm_stops

CHAIN = [{"op": "insert", "relation": "link", "src": s, "dst": d, "cost": 1.0}
         for s, d in (("a", "b"), ("b", "c"))]
CUT = [{"op": "delete", "relation": "link", "src": "a", "dst": "b"}]


def _ingest(lake, path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    ingest_files(lake, [path])


def _reachable(lake) -> set[tuple[str, str]]:
    frame = read_committed(lake, "reachable")
    return set(zip(frame["src"], frame["dst"], strict=True))


def _held(lake) -> bool:
    holder = current_holder(lake)
    return holder is not None and not holder.released


class FakeWorker:
    """Records the batches handed to it and whether the lease was held when it ran them."""

    made: list[FakeWorker] = []

    def __init__(self, settings, **kwargs) -> None:
        self.settings, self.handed, self.finished_held = settings, [], None
        self.started = self.stopped = False
        FakeWorker.made.append(self)

    def submit(self, batch_id: int) -> None:
        self.handed.append(batch_id)

    def start(self) -> FakeWorker:
        self.started = True
        return self

    def finish(self) -> None:
        self.finished_held = _held(self.settings)

    def stop(self) -> list[str]:
        self.stopped = True
        return ["worker stopped"]


@pytest.fixture
def fake_worker(monkeypatch) -> type[FakeWorker]:
    import aspen.queries.worker

    FakeWorker.made = []
    monkeypatch.setattr(aspen.queries.worker, "QueryWorker", FakeWorker)
    return FakeWorker


def test_one_batch_then_its_queries_off_the_lease(lake, tmp_path: Path, fake_worker) -> None:
    _ingest(lake, tmp_path / "chain.jsonl", CHAIN)
    lines: list[str] = []
    report = maintain_once(lake, MaintainOptions(), emit=lines.append)
    assert report.batch_id == 1 and ledger.last_committed(lake).batch_id == 1
    assert lines == report.lines() and lines[0].startswith("batch 1:")
    [worker] = fake_worker.made
    assert worker.handed == [1] and worker.finished_held is False  # released before the queries
    assert _reachable(lake) == {("a", "b"), ("b", "c"), ("a", "c")}
    assert current_holder(lake).released


def test_no_queries_makes_no_worker_and_a_rebuild_speaks_under_its_lease(
        lake, tmp_path: Path, fake_worker) -> None:
    _ingest(lake, tmp_path / "chain.jsonl", CHAIN)
    maintain_once(lake, MaintainOptions(queries=False), emit=lambda line: None)
    held: list[bool] = []
    report = maintain_once(lake, MaintainOptions(rebuild=True),
                           emit=lambda line: held.append(_held(lake)))
    assert fake_worker.made == []  # neither --no-queries nor a rebuild runs queries
    assert report.batch_id == 2 and held and all(held)
    assert current_holder(lake).command == "aspen maintain --runtime local --rebuild"


def test_a_follower_stops_on_its_event_after_its_batches(lake, tmp_path: Path,
                                                         fake_worker) -> None:
    _ingest(lake, tmp_path / "chain.jsonl", CHAIN)
    stop = threading.Event()
    lines: list[str] = []

    def emit(line: str) -> None:  # the follower's own lines drive the test
        lines.append(line)
        if line.startswith("batch 1:"):
            _ingest(lake, tmp_path / "cut.jsonl", CUT)
        elif line.startswith("batch 2:"):
            stop.set()

    options = MaintainOptions(follow=True, poll=0.05, duration=120, expire_every=0,
                              housekeep_every=0)
    report = run_follower(lake, options, stop=stop, emit=emit)
    assert report.batches == 2 and ledger.last_committed(lake).batch_id == 2
    [worker] = fake_worker.made
    assert worker.started and worker.stopped and worker.handed == [1, 2]
    assert lines[-2:] == ["worker stopped", *report.lines()]
    assert _reachable(lake) == {("b", "c")}
    holder = current_holder(lake)
    assert holder.released and holder.command == "aspen maintain --runtime local --follow"


def test_a_follower_stops_when_asked_through_the_lake(lake, tmp_path: Path) -> None:
    _ingest(lake, tmp_path / "chain.jsonl", CHAIN)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    options = MaintainOptions(queries=False, follow=True, poll=0.05, duration=120,
                              inbox=str(inbox), expire_every=0, housekeep_every=0)
    follower = threading.Thread(target=run_follower, args=(lake, options),
                                kwargs={"stop": threading.Event(), "emit": lambda line: None})
    follower.start()
    try:
        deadline = time.monotonic() + 120
        while ledger.last_committed(lake).batch_id < 1:
            assert follower.is_alive() and time.monotonic() < deadline
            time.sleep(0.05)
        assert current_holder(lake).command.endswith(f" --follow --inbox {inbox.resolve()}")
    finally:
        said: list[str] = []
        holder = ask_follower_to_stop(lake, said.append, poll=0.05)
        follower.join(timeout=120)
    assert not follower.is_alive() and holder is not None and holder.follower
    assert said == [f"asked {holder.describe()} to stop after its current batch", "stopped"]
    assert ask_follower_to_stop(lake, said.append) is None
    assert said[-1] == "no maintainer holds the lake's lease: nothing to stop"


def test_one_batch_is_no_follower_and_a_follower_no_batch(lake) -> None:
    with pytest.raises(ConfigError, match="run_follower"):
        maintain_once(lake, MaintainOptions(follow=True))
    with pytest.raises(ConfigError, match="follow=True"):
        run_follower(lake, MaintainOptions(), stop=threading.Event())
    assert current_holder(lake) is None  # refused before the lease


FOLLOWER_FLAGS = {"--poll": ["--poll", "1"], "--inbox": ["--inbox", "/in"],
                  "--max-batches": ["--max-batches", "2"], "--for": ["--for", "3"],
                  "--expire-every": ["--expire-every", "0"],
                  "--housekeep-every": ["--housekeep-every", "0"]}


@given(st.lists(st.sampled_from(list(FOLLOWER_FLAGS)), min_size=1, unique=True))
def test_follower_flags_without_follow_are_named_in_one_line(flags: list[str]) -> None:
    argv = [word for flag in flags for word in FOLLOWER_FLAGS[flag]]
    with pytest.raises(ConfigError) as refused:
        options_from(build_parser().parse_args(argv))
    named = [flag for flag in FOLLOWER_FLAGS if flag in flags]  # in the parser's order
    assert str(refused.value) == f"{', '.join(named)}: only with --follow"
    options_from(build_parser().parse_args([*argv, "--follow"]))  # fine with it


@pytest.mark.parametrize("argv, message", [
    (["--hosts", "2"], "--hosts applies to --runtime spark only"),
    (["--runtime", "spark", "--hosts", "0"], "--hosts must be at least 1, got 0"),
    (["--follow", "--expire-every", "-1"], "--expire-every must not be negative, got -1"),
    (["--rebuild", "--stop"], "--rebuild runs one batch: not with --follow or --stop"),
    (["--rebuild", "--follow"], "--rebuild runs one batch: not with --follow or --stop"),
    (["--stop", "--follow"], "--stop and --follow exclude each other"),
])
def test_flag_combinations_are_refused_as_the_cli_refuses_them(argv, message) -> None:
    with pytest.raises(ConfigError) as refused:
        options_from(build_parser().parse_args(argv))
    assert str(refused.value) == message


def test_the_process_says_an_error_in_one_line_and_exits_2(lake, capsys) -> None:
    assert main(["--lake", lake.lake, "--hosts", "2"]) == 2
    assert capsys.readouterr().err == "aspen maintain: --hosts applies to --runtime spark only\n"
    assert main(["--lake", lake.lake, "--stop"]) == 0
    assert capsys.readouterr().out == "no maintainer holds the lake's lease: nothing to stop\n"


def test_sigterm_sets_the_event_and_the_handler_is_put_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with sigterm_stops() as stop:
        signal.raise_signal(signal.SIGTERM)
        assert stop.is_set()
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_process_words_a_library_error_in_one_line_and_keeps_a_bug(monkeypatch,
                                                                     capsys) -> None:
    from aspen.pipeline.entry import run_entry

    monkeypatch.delenv("ASPEN_DEBUG", raising=False)

    def torn() -> int:
        raise OSError("Kernel error\n  ↳ Json error: Truncated record")

    assert run_entry("aspen maintain", torn, "s3://bucket/lake/") == 2
    assert capsys.readouterr().err == ("aspen maintain: lake s3://bucket/lake: Kernel error "
                                       "(Json error: Truncated record)\n")
    with pytest.raises(KeyError):
        run_entry("aspen maintain", lambda: {}["bug"])
    monkeypatch.setenv("ASPEN_DEBUG", "1")
    with pytest.raises(OSError):
        run_entry("aspen maintain", torn)
