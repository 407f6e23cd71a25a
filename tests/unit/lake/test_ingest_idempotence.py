"""The idempotence rule of ingest: a rerun never appends twice, a new send of a committed file
is applied or refused loudly — never silently dropped (aspen.lake.ingest, "Exactly once")."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aspen.cli.main import main
from aspen.errors import ConfigError
from aspen.lake import tables
from aspen.lake.apply_local import _append as append_rows
from aspen.lake.deltars import append_table, read_table, table_columns, table_version
from aspen.lake.ingest import ingest_data, ingest_files
from aspen.settings import Settings

CUT = '{"op": "delete", "relation": "link", "src": "a", "dst": "b"}\n'
ADD = '{"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": 1}\n'


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _log(lake: Settings) -> list[tuple[int, str, str]]:
    """(batch, source, op) of every logged update, in seq order."""
    frame = read_table(lake, tables.UPDATES, ["seq", "batch_id", "source", "op"])
    frame = frame.sort_values("seq")
    return [(int(b), s, o) for b, s, o in zip(frame["batch_id"], frame["source"], frame["op"],
                                                strict=True)]


def test_cut_add_cut_is_refused_loudly_then_applied_with_again(tmp_path: Path, capsys) -> None:
    lake = tmp_path / "lake"
    cut, add = _write(tmp_path / "cut.jsonl", CUT), _write(tmp_path / "add.jsonl", ADD)
    assert main(["--lake", str(lake), "ingest", str(cut)]) == 0
    assert main(["--lake", str(lake), "ingest", str(add)]) == 0
    capsys.readouterr()
    settings_ = Settings(lake=str(lake))
    version = table_version(settings_, tables.INGEST_FILES)

    assert main(["--lake", str(lake), "ingest", str(cut)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.strip().splitlines()  # one line, naming the batch and the remedy
    assert "cut.jsonl was already ingested in batch 1 and batch 2 was ingested since" in line
    assert "--again" in line
    assert table_version(settings_, tables.INGEST_FILES) == version  # nothing written
    assert _log(settings_) == [(1, "cut.jsonl", "delete"), (2, "add.jsonl", "insert")]

    assert main(["--lake", str(lake), "ingest", "--again", str(cut)]) == 0
    out = capsys.readouterr().out
    assert ("warning: cut.jsonl: repeats batch 1 (same name and content); applied again as a "
            "new send") in out
    assert _log(settings_) == [(1, "cut.jsonl", "delete"), (2, "add.jsonl", "insert"),
                               (3, "cut.jsonl", "delete")]
    # and right after, the same call again is a rerun of that latest batch: a no-op, exit 0
    assert main(["--lake", str(lake), "ingest", str(cut)]) == 0
    assert "cut.jsonl: already ingested (same content) in batch 3; nothing to do" in (
        capsys.readouterr().out)
    assert len(_log(settings_)) == 3


def test_a_delivery_makes_a_late_rerun_a_no_op_and_another_delivery_a_new_send(
        lake: Settings, tmp_path: Path) -> None:
    cut, add = _write(tmp_path / "cut.jsonl", CUT), _write(tmp_path / "add.jsonl", ADD)
    assert ingest_files(lake, [cut], delivery="claim-1").batch_id == 1
    assert ingest_files(lake, [add], delivery="claim-2").batch_id == 2
    rerun = ingest_files(lake, [cut], delivery="claim-1")  # the follower restarted, say
    assert rerun.batch_id is None
    assert rerun.lines()[0] == ("cut.jsonl: already ingested in batch 1 (rerun of this "
                                "delivery); nothing to do")
    resent = ingest_files(lake, [cut], delivery="claim-3")
    assert resent.batch_id == 3
    assert "warning: cut.jsonl: repeats batch 1 (same name and content); applied again as a " \
           "new send" in resent.lines()
    assert [op for _, _, op in _log(lake)] == ["delete", "insert", "delete"]
    deliveries = read_table(lake, tables.INGEST_FILES, ["batch_id", "delivery"])
    assert sorted(zip(deliveries["batch_id"], deliveries["delivery"], strict=True)) == [
        (1, "claim-1"), (2, "claim-2"), (3, "claim-3")]
    with pytest.raises(ConfigError, match="delivery token must not be empty"):
        ingest_files(lake, [cut], delivery=" ")


def test_ingest_data_keeps_the_plain_rerun_rule(lake: Settings, tmp_path: Path) -> None:
    named = [("stream-r-00000001.jsonl", CUT.encode())]
    assert ingest_data(lake, named).batch_id == 1
    assert ingest_files(lake, [_write(tmp_path / "add.jsonl", ADD)]).batch_id == 2
    assert ingest_data(lake, named).batch_id is None  # a rerun, however late
    assert len(_log(lake)) == 2


def test_an_old_lake_without_the_delivery_column_reads_and_appends(lake: Settings,
                                                                   tmp_path: Path) -> None:
    """A lake made before the column: its marker rows read as no delivery; ingest adds the
    column on its append; a writer that does not know it (the TTL sweep) still appends."""
    old = _write(tmp_path / "old.jsonl", CUT)
    assert ingest_files(lake, [old]).batch_id == 1
    frame = read_table(lake, tables.INGEST_FILES).drop(columns=["delivery"])
    import pyarrow as pa
    from deltalake import write_deltalake

    write_deltalake(lake.table_uri(tables.INGEST_FILES), pa.Table.from_pandas(
        frame, schema=tables.arrow_schema_of(tables.INGEST_FILES), preserve_index=False),
        mode="overwrite", schema_mode="overwrite")
    assert "delivery" not in table_columns(lake, tables.INGEST_FILES)

    assert ingest_files(lake, [old]).batch_id is None  # its rows read: a rerun
    assert ingest_files(lake, [_write(tmp_path / "new.jsonl", ADD)], delivery="d").batch_id == 2
    assert table_columns(lake, tables.INGEST_FILES)[-1] == "delivery"
    append_rows(lake, tables.INGEST_FILES, [  # as the in-process TTL sweep writes its marker
        ("expire@now", "", None, 3, 3, 2, 0, 0, 0, None)])
    append_table(lake, tables.INGEST_FILES, tables.arrow_schema_of(tables.INGEST_FILES)
                 .empty_table())  # an empty append on an existing table commits nothing
    rows = read_table(lake, tables.INGEST_FILES).sort_values("batch_id")
    assert rows["batch_id"].tolist() == [1, 2, 3]
    assert [None if v != v else v for v in rows["delivery"]] == [None, "d", None]
    with pytest.raises(ConfigError, match="old.jsonl was already ingested in batch 1 and "
                                          "batch 2 was ingested since"):
        ingest_files(lake, [old])  # the sweep's batch 3 holds no file: batch 2 is the latest


# --- the model: random sends and reruns over a few names and contents --------------------------

NAMES = ("a.jsonl", "b.jsonl")
CONTENTS = tuple(
    json.dumps({"op": "insert", "relation": "triggered", "id": f"s{i}"}) + "\n" for i in range(3))
OPS = st.lists(st.tuples(st.sampled_from(NAMES), st.integers(0, len(CONTENTS) - 1),
                         st.sampled_from([None, "d1", "d2"]), st.booleans()),
               min_size=1, max_size=7)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_sends_and_reruns_follow_the_model(ops: list[tuple[str, int, str | None, bool]]) -> None:
    """Model: a committed (name, content) is a rerun under its own delivery, or (no delivery)
    when its last batch is the latest; otherwise a new send is appended, or — without a
    delivery and without ``again`` — refused with an error. The log holds exactly one copy of
    a file's records per send; a call never reports success having dropped a new send."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        lake = Settings(lake=str(root / "lake"))
        sends: dict[tuple[str, int], list[tuple[int, str | None]]] = {}
        last_batch = 0
        for step, (name, content, delivery, again) in enumerate(ops):
            path = root / str(step) / name
            path.parent.mkdir()
            path.write_text(CONTENTS[content])
            prior = sends.get((name, content), [])
            expected = "new"
            if prior and not again:
                if delivery is not None and delivery in [d for _, d in prior]:
                    expected = "rerun"
                elif delivery is None:
                    latest = max(b for b, _ in prior) == last_batch
                    expected = "rerun" if latest else "refused"
            before = len(read_table(lake, tables.UPDATES)) if last_batch else 0
            if expected == "refused":
                with pytest.raises(ConfigError, match="--again"):
                    ingest_files(lake, [path], delivery=delivery, again=again)
            else:
                report = ingest_files(lake, [path], delivery=delivery, again=again)
                if expected == "rerun":
                    assert report.batch_id is None
                    assert report.files[0].already_ingested_in == max(
                        b for b, d in prior if delivery is None or d == delivery)
                else:
                    last_batch += 1
                    assert report.batch_id == last_batch and report.files[0].valid == 1
                    assert ("repeats batch" in (report.files[0].warning() or "")) == bool(prior)
                    sends.setdefault((name, content), []).append((last_batch, delivery))
            after = len(read_table(lake, tables.UPDATES)) if last_batch else 0
            assert after - before == (1 if expected == "new" else 0)
        if last_batch:
            logged = read_table(lake, tables.UPDATES, ["batch_id", "source", "id"])
            assert sorted(zip(logged["batch_id"], logged["source"], logged["id"],
                              strict=True)) == sorted(
                (batch, name, f"s{content}") for (name, content), done in sends.items()
                for batch, _ in done)
