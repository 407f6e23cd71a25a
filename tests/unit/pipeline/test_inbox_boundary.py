"""The follower's inbox and the lake roots are a boundary: whatever lands in the inbox, the
follower reads regular files only, each file is claimed (and ingested) by one follower, a crash
between claim and move is resumed, and no form of a lake or inbox path gets past its root.

Real lakes through delta-rs where the tables are the point; a recording stand-in for
``ingest_files`` where only the claims are (the interleavings). No Spark.
"""

from __future__ import annotations

import os
import stat
import threading
from collections import Counter
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from aspen.errors import ConfigError, InjectedCrash
from aspen.lake import deltars
from aspen.lake.ingest import IngestReport
from aspen.pipeline import inbox as inbox_module
from aspen.pipeline.follow import follow
from aspen.pipeline.inbox import (
    CLAIMED,
    INGESTED,
    REFUSED,
    InboxTally,
    claim_folder,
    claimed_files,
    inbox_folder,
    ingest_inbox,
    landed_files,
    waiting_files,
)
from aspen.pipeline.launch import ALLOWED_ROOTS_ENV, check_run_path
from aspen.settings import Settings, lake_root_uri, normal_uri

SECRET = "hunter2-do-not-leak"
LOG_TABLES = ("updates", "quarantine", "ingest_files")


def _record(key: str) -> str:
    return f'{{"op": "insert", "relation": "sensor", "id": "{key}", "x": 1.0, "y": 2.0}}\n'


def _land(inbox: Path, name: str, key: str | None = None) -> Path:
    """An update file landed the way a writer should: written under a hidden name, renamed."""
    inbox.mkdir(parents=True, exist_ok=True)
    hidden = inbox / f".{name}"
    hidden.write_text(_record(key or Path(name).stem))
    return hidden.rename(inbox / name)


def _lake_text(lake: Settings) -> str:
    """Everything the ingest tables hold, as one text (empty when nothing was ingested)."""
    parts = []
    for name in LOG_TABLES:
        if deltars.table_exists(lake, name):
            parts.append(deltars.read_table(lake, name).astype(str).to_csv())
    return "\n".join(parts)


def _sources(lake: Settings) -> list[str]:
    if not deltars.table_exists(lake, "ingest_files"):
        return []
    return sorted(deltars.read_table(lake, "ingest_files", ["source"])["source"])


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file outside the inbox that the follower's user can read: it must never be read."""
    path = tmp_path / "elsewhere" / "secret.jsonl"
    path.parent.mkdir()
    path.write_text(_record(SECRET) + f"password={SECRET}\n")
    return path


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The real paths opened through ``os.open`` or ``open`` while the test runs."""
    import builtins
    import io

    opened: list[Path] = []

    def spying(original):
        def spy(file, *args, **kwargs):
            if isinstance(file, (str, Path)):
                opened.append(Path(os.path.realpath(file)))
            return original(file, *args, **kwargs)
        return spy

    monkeypatch.setattr(os, "open", spying(os.open))
    monkeypatch.setattr(io, "open", spying(io.open))
    monkeypatch.setattr(builtins, "open", spying(builtins.open))
    return opened


# -- only regular files are read -------------------------------------------------------------


def test_a_symlink_to_a_secret_is_never_read(lake, tmp_path, secret, reads) -> None:
    inbox = tmp_path / "inbox"
    _land(inbox, "good.jsonl")
    (inbox / "leak.jsonl").symlink_to(secret)
    (inbox / "environ.jsonl").symlink_to("/proc/self/environ")
    reads.clear()
    lines = ingest_inbox(lake, inbox)
    opened = list(reads)
    assert "good.jsonl" in [p.name for p in opened]  # the spy sees what ingest opens …
    assert secret not in opened and Path("/proc/self/environ").resolve() not in opened
    for name in ("leak.jsonl", "environ.jsonl"):
        assert (f"inbox: {name} is a symbolic link, not a regular file: not read, moved to "
                f"{REFUSED}/{name}") in lines
        assert (inbox / REFUSED / name).is_symlink()  # the link moved, not its target
    assert secret.read_text().startswith(_record(SECRET))  # the target is untouched
    assert _sources(lake) == ["good.jsonl"]
    assert SECRET not in _lake_text(lake) and "PATH=" not in _lake_text(lake)
    assert ingest_inbox(lake, inbox) == []  # reported once: the next look says nothing


def test_a_fifo_does_not_block_and_is_refused(lake, tmp_path) -> None:
    inbox = tmp_path / "inbox"
    _land(inbox, "good.jsonl")
    os.mkfifo(inbox / "pipe.jsonl")
    result: list[list[str]] = []
    worker = threading.Thread(target=lambda: result.append(ingest_inbox(lake, inbox)),
                              daemon=True)
    worker.start()
    worker.join(timeout=120)  # a guard against a hang, not a measure: opening it would block
    assert not worker.is_alive(), "the follower opened the fifo"
    assert ("inbox: pipe.jsonl is a fifo, not a regular file: not read, moved to "
            f"{REFUSED}/pipe.jsonl") in result[0]
    assert stat.S_ISFIFO(os.lstat(inbox / REFUSED / "pipe.jsonl").st_mode)
    assert _sources(lake) == ["good.jsonl"]


def test_folders_and_other_names_are_left_alone_or_refused(lake, tmp_path) -> None:
    inbox = tmp_path / "inbox"
    (inbox / "archive").mkdir(parents=True)  # no update file's name: not the inbox's business
    (inbox / "notes.txt").write_text("x")
    (inbox / "odd.jsonl").mkdir()  # an update file's name, but a folder
    lines = ingest_inbox(lake, inbox)
    assert lines == ["inbox: odd.jsonl is a folder, not a regular file: not read, moved to "
                     f"{REFUSED}/odd.jsonl"]
    assert (inbox / "archive").is_dir() and (inbox / "notes.txt").is_file()
    assert not deltars.table_exists(lake, "ingest_files")


def test_a_refused_name_taken_gets_a_number(lake, tmp_path, secret) -> None:
    inbox = tmp_path / "inbox"
    for _ in range(2):
        (inbox / "x.jsonl").parent.mkdir(exist_ok=True)
        (inbox / "x.jsonl").symlink_to(secret)
        ingest_inbox(lake, inbox)
    assert sorted(p.name for p in (inbox / REFUSED).iterdir()) == ["x.1.jsonl", "x.jsonl"]


def test_a_link_in_place_of_a_folder_of_the_follower_is_never_followed(lake, tmp_path,
                                                                        secret) -> None:
    """``.claimed`` (or ``ingested``) made a link elsewhere: the follower would read from there
    (or write there); it is renamed aside instead."""
    inbox = tmp_path / "inbox"
    elsewhere = secret.parent
    claims = elsewhere / claim_folder(lake, inbox).name / "00000000000000000001-abcdef"
    claims.mkdir(parents=True)
    os.link(secret, claims / "stolen.jsonl")  # a regular file, but not one that landed
    inbox.mkdir()
    (inbox / CLAIMED).symlink_to(elsewhere)
    (inbox / INGESTED).symlink_to(elsewhere)
    _land(inbox, "good.jsonl")
    lines = ingest_inbox(lake, inbox)
    assert any(line.startswith(f"inbox: {inbox / CLAIMED} was a symbolic link, not a folder: "
                               "renamed aside") for line in lines)
    assert any(line.startswith(f"inbox: {inbox / INGESTED} was a symbolic link")
               for line in lines)
    assert _sources(lake) == ["good.jsonl"] and SECRET not in _lake_text(lake)
    assert (inbox / INGESTED / "good.jsonl").is_file()
    assert sorted(p.name for p in elsewhere.iterdir()) == [claims.parent.name, "secret.jsonl"]


# -- changes between listing and claim ---------------------------------------------------------


def _after_listing(monkeypatch: pytest.MonkeyPatch, inbox: Path, change) -> None:
    """Run ``change`` once, right after the follower lists ``inbox``."""
    original = inbox_module._scan
    done: list[bool] = []

    def listing_then_change(folder: Path):
        found = original(folder)
        if folder == inbox and not done:
            done.append(True)
            change()
        return found

    monkeypatch.setattr(inbox_module, "_scan", listing_then_change)


def test_a_file_deleted_between_listing_and_claim_is_skipped_with_a_line(
        lake, tmp_path, monkeypatch) -> None:
    inbox = tmp_path / "inbox"
    _land(inbox, "a.jsonl")
    gone = _land(inbox, "b.jsonl")
    _after_listing(monkeypatch, inbox, gone.unlink)
    lines = ingest_inbox(lake, inbox)
    assert "inbox: b.jsonl was gone before it could be claimed; skipped" in lines
    assert _sources(lake) == ["a.jsonl"]
    assert claimed_files(lake, inbox) == [] and landed_files(inbox) == []


def test_a_file_swapped_for_a_link_before_its_claim_is_not_read(lake, tmp_path, monkeypatch,
                                                               secret, reads) -> None:
    inbox = tmp_path / "inbox"
    swapped = _land(inbox, "a.jsonl")

    def swap() -> None:
        swapped.unlink()
        swapped.symlink_to(secret)

    _after_listing(monkeypatch, inbox, swap)
    reads.clear()
    lines = ingest_inbox(lake, inbox)
    assert any(line.startswith("inbox: a.jsonl became a symbolic link before its claim: not "
                               "read") for line in lines)
    assert secret not in reads and SECRET not in _lake_text(lake)
    assert not deltars.table_exists(lake, "ingest_files")


def test_a_file_replaced_between_listing_and_claim_waits_for_the_next_look(
        lake, tmp_path, monkeypatch) -> None:
    inbox = tmp_path / "inbox"
    _land(inbox, "a.jsonl", key="old")
    _after_listing(monkeypatch, inbox, lambda: _land(inbox, "a.jsonl", key="new"))
    lines = ingest_inbox(lake, inbox)
    assert lines == ["inbox: a.jsonl changed while it was claimed; left for the next look"]
    assert [p.name for p in landed_files(inbox)] == ["a.jsonl"]
    ingest_inbox(lake, inbox)
    updates = deltars.read_table(lake, "updates", ["id"])
    assert list(updates["id"]) == ["new"]


class _LockedOs:
    """``os`` as the inbox module sees it, where renaming ``locked.jsonl`` is not permitted (as
    for another user's file in a sticky inbox; the tests may run as root)."""

    def __getattr__(self, name: str):
        return getattr(os, name)

    def rename(self, src, dst):
        if Path(src).name == "locked.jsonl" and Path(src).parent.name == "inbox":
            raise PermissionError(1, "Operation not permitted")
        return os.rename(src, dst)


def test_a_file_that_cannot_be_claimed_is_reported_once_and_never_ends_the_look(
        lake, tmp_path, monkeypatch) -> None:
    inbox = tmp_path / "inbox"
    _land(inbox, "locked.jsonl")
    _land(inbox, "a.jsonl")
    monkeypatch.setattr(inbox_module, "os", _LockedOs())
    tally = InboxTally()
    first = ingest_inbox(lake, inbox, tally)
    assert ("inbox: locked.jsonl cannot be claimed (Operation not permitted); left unread"
            in first)
    assert not any("locked.jsonl" in line for line in ingest_inbox(lake, inbox, tally))
    assert _sources(lake) == ["a.jsonl"] and tally.claimed == 1


class _BusyNameOs:
    """``os`` as the inbox module sees it, where a third ``a.jsonl`` lands just before the
    follower gives a changed one back to the inbox."""

    def __init__(self, inbox: Path) -> None:
        self.inbox = inbox

    def __getattr__(self, name: str):
        return getattr(os, name)

    def link(self, src, dst, **kwargs):
        if Path(dst) == self.inbox / "a.jsonl" and not Path(dst).exists():
            _land(self.inbox, "a.jsonl", key="third")
        return os.link(src, dst, **kwargs)


def test_a_changed_file_whose_name_is_taken_again_is_kept_and_resumed(
        lake, tmp_path, monkeypatch) -> None:
    inbox = tmp_path / "inbox"
    _land(inbox, "a.jsonl", key="first")
    _after_listing(monkeypatch, inbox, lambda: _land(inbox, "a.jsonl", key="second"))
    monkeypatch.setattr(inbox_module, "os", _BusyNameOs(inbox))
    lines = ingest_inbox(lake, inbox)  # does not end on the claim folder left non-empty
    assert lines == ["inbox: a.jsonl changed while it was claimed; kept for the next look"]
    assert [p.name for p in claimed_files(lake, inbox)] == ["a.jsonl"]
    ingest_inbox(lake, inbox)  # resumes the kept one, then claims the third
    ingest_inbox(lake, inbox)
    assert sorted(deltars.read_table(lake, "updates", ["id"])["id"]) == ["second", "third"]
    assert waiting_files(lake, inbox) == []


# -- one claim per file -------------------------------------------------------------------------


class _RecordingIngest:
    """A stand-in for ``ingest_files``: records (lake, file name, delivery) and reads nothing."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str | None]] = []
        self.lock = threading.Lock()

    def __call__(self, lake: Settings, paths, wait: float = 0, delivery: str | None = None,
                 again: bool = False) -> IngestReport:
        with self.lock:
            self.calls += [(lake.lake, Path(p).name, delivery) for p in paths]
        return IngestReport(None, [])


class _Turns:
    """Runs followers in threads, one step at a time, in an order hypothesis draws: a step ends
    at each listing of the inbox, rename, link or unlink — the points where two followers'
    claims can interleave."""

    def __init__(self, draw_index) -> None:
        self.draw_index = draw_index
        self.cond = threading.Condition()
        self.waiting: list[str] = []
        self.go: str | None = None
        self.finished: set[str] = set()

    def point(self, me: str) -> None:
        with self.cond:
            self.waiting.append(me)
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.go == me)
            self.go = None
            self.waiting.remove(me)

    def run(self, workers: dict[str, object]) -> None:
        errors: list[BaseException] = []

        def body(name: str, work) -> None:
            try:
                self.point(name)
                work()
            except BaseException as err:  # noqa: BLE001 - reported by the test below
                errors.append(err)
            finally:
                with self.cond:
                    self.finished.add(name)
                    self.cond.notify_all()

        threads = [threading.Thread(target=body, args=item, name=item[0], daemon=True)
                   for item in workers.items()]
        for thread in threads:
            thread.start()
        while True:
            with self.cond:
                self.cond.wait_for(lambda: self.go is None and len(self.waiting)
                                   + len(self.finished) == len(workers))
                if len(self.finished) == len(workers):
                    break
                ready = sorted(self.waiting)
                self.go = ready[self.draw_index(len(ready))]
                self.cond.notify_all()
        for thread in threads:
            thread.join()
        assert not errors, errors


class _SteppedOs:
    """``os`` as the inbox module sees it, with a step point before each operation that decides
    which follower claims what."""

    def __init__(self, turns: _Turns) -> None:
        self.turns = turns

    def __getattr__(self, name: str):
        return getattr(os, name)

    def _step(self) -> None:
        name = threading.current_thread().name
        if name in ("A", "B"):
            self.turns.point(name)

    def scandir(self, path):
        self._step()
        return os.scandir(path)

    def rename(self, src, dst):
        self._step()
        return os.rename(src, dst)

    def link(self, src, dst, **kwargs):
        self._step()
        return os.link(src, dst, **kwargs)

    def unlink(self, path):
        self._step()
        return os.unlink(path)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(files=st.integers(min_value=1, max_value=5), data=st.data(),
       looks=st.tuples(st.integers(1, 2), st.integers(1, 2)))
def test_two_lakes_sharing_an_inbox_ingest_each_file_once_in_any_interleaving(
        tmp_path_factory, monkeypatch, files, data, looks) -> None:
    root = tmp_path_factory.mktemp("race")
    inbox = root / "inbox"
    names = [f"f{i}.jsonl" for i in range(files)]
    for name in names:
        _land(inbox, name)
    recorder = _RecordingIngest()
    chooser = data.draw(st.randoms(use_true_random=False))  # uniform over the interleavings
    turns = _Turns(lambda n: chooser.randrange(n))
    lakes = {"A": Settings(lake=str(root / "lake-a")), "B": Settings(lake=str(root / "lake-b"))}
    tallies = {"A": InboxTally(), "B": InboxTally()}
    with monkeypatch.context() as patch:
        patch.setattr("aspen.lake.ingest.ingest_files", recorder)
        patch.setattr(inbox_module, "os", _SteppedOs(turns))

        def looking(who: str, count: int):
            def work() -> None:
                for _ in range(count):
                    ingest_inbox(lakes[who], inbox, tallies[who])
            return work

        turns.run({"A": looking("A", looks[0]), "B": looking("B", looks[1])})
    ingested = Counter(name for _, name, _ in recorder.calls)
    assert ingested == Counter(names)  # every file exactly once, over both lakes
    assert tallies["A"].claimed + tallies["B"].claimed == files
    event(f"claims split {tallies['A'].claimed}:{tallies['B'].claimed}, "
          f"{tallies['A'].lost + tallies['B'].lost} lost")
    assert sorted(p.name for p in (inbox / INGESTED).iterdir()) == names
    for lake in lakes.values():
        assert waiting_files(lake, inbox) == []


def test_two_followers_racing_on_real_lakes_ingest_each_file_once(tmp_path) -> None:
    inbox = tmp_path / "inbox"
    names = [f"f{i}.jsonl" for i in range(8)]
    lakes = [Settings(lake=str(tmp_path / "lake-a")), Settings(lake=str(tmp_path / "lake-b"))]
    start = threading.Barrier(3)
    errors: list[BaseException] = []

    def follower(lake: Settings) -> None:
        try:
            start.wait()
            for _ in range(4):
                ingest_inbox(lake, inbox)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=follower, args=(lake,)) for lake in lakes]
    for thread in threads:
        thread.start()
    start.wait()
    for name in names:  # files landing while both look
        _land(inbox, name)
    for thread in threads:
        thread.join()
    assert not errors, errors
    for lake in lakes:  # what landed after their last look
        ingest_inbox(lake, inbox)
    sources = _sources(lakes[0]) + _sources(lakes[1])
    assert sorted(sources) == names
    updates = sum(len(deltars.read_table(lake, "updates", ["seq"])) for lake in lakes
                  if deltars.table_exists(lake, "updates"))
    assert updates == len(names)


# -- a crash between claim and move -------------------------------------------------------------


def test_a_claim_is_resumed_with_its_token_after_a_crash_before_ingest(lake, tmp_path,
                                                                       monkeypatch) -> None:
    inbox = tmp_path / "inbox"
    _land(inbox, "a.jsonl")
    recorder = _RecordingIngest()

    def crash(*args, **kwargs):
        recorder(*args, **kwargs)
        raise InjectedCrash("crash between claim and ingest")

    monkeypatch.setattr("aspen.lake.ingest.ingest_files", crash)
    with pytest.raises(InjectedCrash):
        ingest_inbox(lake, inbox)
    assert landed_files(inbox) == []
    assert [p.name for p in claimed_files(lake, inbox)] == ["a.jsonl"]
    token = recorder.calls[0][2]
    monkeypatch.setattr("aspen.lake.ingest.ingest_files", recorder)
    _land(inbox, "b.jsonl")
    lines = ingest_inbox(lake, inbox)
    assert lines[0] == f"inbox: resuming claim {token}"
    assert recorder.calls[1] == (lake.lake, "a.jsonl", token)  # the same delivery again
    assert recorder.calls[2][1] == "b.jsonl" and recorder.calls[2][2] not in (token, None)


def test_a_crash_after_the_ingest_committed_reruns_to_the_same_tables(lake, tmp_path,
                                                                      monkeypatch) -> None:
    inbox = tmp_path / "inbox"
    for name in ("a.jsonl", "b.jsonl"):
        _land(inbox, name)
    original = inbox_module._move_into
    crashed: list[bool] = []

    def crash_once(path: Path, folder: Path) -> Path:
        if folder.name == INGESTED and not crashed:
            crashed.append(True)
            raise InjectedCrash("crash between ingest and move")
        return original(path, folder)

    monkeypatch.setattr(inbox_module, "_move_into", crash_once)
    with pytest.raises(InjectedCrash):
        ingest_inbox(lake, inbox)
    before = {name: deltars.read_table(lake, name).drop(columns="ingested_at")
              for name in LOG_TABLES}
    lines = ingest_inbox(lake, inbox)
    assert "nothing new to ingest" in lines  # the rerun is a no-op
    for name, frame in before.items():
        after = deltars.read_table(lake, name).drop(columns="ingested_at")
        assert after.sort_values(list(after.columns)).reset_index(drop=True).equals(
            frame.sort_values(list(frame.columns)).reset_index(drop=True))
    assert sorted(p.name for p in (inbox / INGESTED).iterdir()) == ["a.jsonl", "b.jsonl"]
    assert waiting_files(lake, inbox) == []


def test_an_ingested_name_taken_is_kept_beside_it(lake, tmp_path) -> None:
    inbox = tmp_path / "inbox"
    _land(inbox, "a.jsonl", key="first")
    ingest_inbox(lake, inbox)
    _land(inbox, "a.jsonl", key="second")
    ingest_inbox(lake, inbox)
    assert sorted(p.name for p in (inbox / INGESTED).iterdir()) == ["a.1.jsonl", "a.jsonl"]
    assert (inbox / INGESTED / "a.jsonl").read_text() == _record("first")


def test_the_follower_counts_its_claims(lake, tmp_path) -> None:
    inbox = tmp_path / "inbox"
    _land(inbox, "a.jsonl")
    lines: list[str] = []
    asked = iter([False])  # one look, then stop
    report = follow(lake, _nothing, poll=0.01, emit=lines.append, inbox=inbox,
                    stop_requested=lambda: next(asked, True))
    assert report.inbox.claimed == 1 and (inbox / INGESTED / "a.jsonl").is_file()
    assert report.lines()[-1] == "inbox: 1 file(s) claimed, 0 taken first by another follower"


def _nothing():
    from aspen.pipeline.batch import MaintainReport

    return MaintainReport(0, -1, nothing_to_do=True)


# -- lake roots and inboxes: normalised before any check ----------------------------------------


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """An allowed root holding a link out of it, and the folder outside."""
    tmp_path = tmp_path.resolve()
    root, outside = tmp_path / "lakes", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "out").symlink_to(outside)
    (root / "real").mkdir()
    (root / "in").symlink_to(root / "real")
    monkeypatch.setenv(ALLOWED_ROOTS_ENV, str(root))
    monkeypatch.delenv("ASPEN_LAKE", raising=False)
    return root, outside


@pytest.mark.parametrize("form", [
    "{root}/out/x",  # a link out of the root, as a path …
    "file://{root}/out/x",  # … and as a file URI, the form that was not resolved
    "file://localhost{root}/out/x",
    "file://{root}/x?/../../outside/x",
    "file://{root}/x#/../../outside/x",
    "file://{root}/x;/../../outside/x",
    "file://{root}/%2e%2e/outside/x",
    "file://{root}/%2E%2E/outside/x",
    "file://{root}/x%2F%2E%2E%2F%2E%2E/outside/x",
    "{root}/x/../../outside/x",
    "file://{root}/../outside/x",
    "file://{root}/./../outside/x",
    "file://{root}?",
    "file://{outside}/x",
])
def test_escaping_forms_are_refused(roots, form) -> None:
    root, outside = roots
    value = form.format(root=root, outside=outside)
    with pytest.raises(ConfigError) as raised:
        check_run_path("lake", value, None)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("value", [
    "s3a://bucket/lakes/x?y", "s3a://bucket/lakes/x#y", "s3a://bucket/lakes/x;y",
    "s3a://bucket/lakes/%2e%2e/other", "s3a://bucket/lakes/../other", "gs://b/lakes/./x",
    "file://otherhost/srv/lake", "file:relative/lake", "file:///srv/lake%00x",
])
def test_malformed_uris_are_config_errors(value) -> None:
    with pytest.raises(ConfigError) as raised:
        lake_root_uri(value)
    assert "\n" not in str(raised.value)


def test_a_query_can_no_longer_fold_every_table_into_one_folder(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"has a query \('\?'\)"):
        Settings(lake=(tmp_path / "lake").as_uri() + "?").table_uri("updates")
    odd = Settings(lake=str(tmp_path / "a?b #c"))  # as a path the characters are the name's
    assert odd.local_table_path("updates") != odd.local_table_path("readings")
    assert odd.local_table_path("updates") == str(tmp_path / "a?b #c" / "updates")


def test_links_inside_the_root_resolve_inside_it_and_the_lake_is_written_there(roots) -> None:
    from aspen.lake.ingest import ingest_data

    root, outside = roots
    for value in (f"{root}/in/x", f"file://{root}/in/x", f"file://{quote(str(root))}/in/x/"):
        assert check_run_path("lake", value, None) == (root / "real" / "x").as_uri()
    lake = Settings(lake=check_run_path("lake", (root / "in" / "x").as_uri(), None))
    ingest_data(lake, [("a.jsonl", _record("k").encode())])
    assert (root / "real" / "x" / "updates" / "_delta_log").is_dir()
    assert list(outside.iterdir()) == []


def test_a_configured_lake_through_a_link_is_itself(roots) -> None:
    root, _ = roots
    assert check_run_path("lake", str(root / "real"), f"file://{root}/in") == \
        (root / "real").as_uri()


_SEGMENTS = st.sampled_from(["x", "y", "..", ".", "%2e%2e", "%2E.", "out", "in", "real", "?",
                             "#", ";", "%3F", "%2F..", "a?b", ""])


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(segments=st.lists(_SEGMENTS, min_size=1, max_size=5), as_uri=st.booleans())
def test_no_form_gets_a_lake_outside_the_root(roots, segments, as_uri) -> None:
    root, _ = roots
    text = "/".join([str(root), *segments])
    value = f"file://{text}" if as_uri else text
    try:
        uri = check_run_path("lake", value, None)
    except ConfigError as err:
        assert "\n" not in str(err)
        return
    real = Path(os.path.realpath(inbox_folder(uri)))
    assert real == root or root in real.parents  # where the tables would really be written
    assert "?" not in uri and "#" not in uri


def test_the_inbox_is_normalised_too(roots, tmp_path) -> None:
    root, outside = roots
    assert inbox_folder(f"file://{root}/in/box") == root / "real" / "box"
    assert inbox_folder(str(root / "out")) == outside
    for bad in (f"file://{root}/box?/../..", f"file://{root}/%2e%2e", "s3a://bucket/inbox"):
        with pytest.raises(ConfigError):
            inbox_folder(bad)
    assert normal_uri(f"file://{root}/in", "the inbox") == (root / "real").as_uri()


def test_maintain_follow_refuses_an_escaping_inbox_in_one_line(capsys, lake, tmp_path) -> None:
    from aspen.cli.main import main

    argv = ["--lake", lake.lake, "maintain", "--follow", "--inbox",
            f"file://{tmp_path}/inbox?/../../etc"]
    try:
        code = main(argv)
    except SystemExit as exit_info:
        code = exit_info.code
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "the inbox" in err and "has a query" in err


@pytest.mark.parametrize("lake", ["file://{tmp}/lake?/../../etc", "file://{tmp}/%2e%2e/etc",
                                  "file://{tmp}/lake#x", "s3a://bucket/lake?x"])
def test_an_escaping_lake_is_one_line_for_every_command(capsys, tmp_path, lake) -> None:
    from aspen.cli.main import main

    try:
        code = main(["--lake", lake.format(tmp=tmp_path), "show", "reachable"])
    except SystemExit as exit_info:
        code = exit_info.code
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("aspen show: the lake "
                                                                       "root"), err
    assert list(tmp_path.iterdir()) == []  # nothing made anywhere
