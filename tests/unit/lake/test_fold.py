"""The per-key fold of apply, without Spark: insert, renewal, replacement, delete, TTL."""

from __future__ import annotations

import random

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.lake.fold import FOLD_OUTPUT_COLUMNS, fold_key, fold_sorted

T0 = pd.Timestamp("2026-01-01 00:00:00")


def update(seq: int, op: str, relation: str = "link", key: str = '["a","b"]', batch: int = 1,
           **values: object) -> dict:
    return {"kind": 1, "relation": relation, "key": key, "seq": seq, "batch_id": batch, "op": op,
            "ttl_s": None, "event_time": None, "ingested_at": T0, **values}


def live(var: str, seq: int, values: str, relation: str = "link", key: str = '["a","b"]') -> dict:
    return {"kind": 0, "relation": relation, "key": key, "seq": seq, "batch_id": 1, "var": var,
            "values": values, "inserted_at": T0, "expires_at": None}


def rows(frame: pd.DataFrame) -> dict[str, dict]:
    return {r["var"]: r for r in frame.to_dict("records") if r["row_kind"] == "instance"}


def test_insert_renewal_replacement_and_delete_in_seq_order() -> None:
    group = pd.DataFrame([
        update(4, "delete", batch=2, src="a", dst="b"),
        update(1, "insert", src="a", dst="b", cost=1.0),
        update(2, "insert", src="a", dst="b", cost=1.0),  # renewal
        update(3, "insert", src="a", dst="b", cost=7.0),  # replacement
    ])
    out = rows(fold_key(group))
    assert list(fold_key(group).columns) == list(FOLD_OUTPUT_COLUMNS)
    assert {v: (r["death"], r["deleted_seq"]) for v, r in out.items()} == {
        "v1": ("replaced", 3), "v2": ("replaced", 3), "v3": ("deleted", 4)}
    assert out["v3"]["deleted_batch"] == 2 and out["v3"]["cost"] == 7.0
    assert all(r["born"] for r in out.values())


def test_existing_instances_die_on_replacement_but_not_on_renewal() -> None:
    state = [live("v1", 1, '["a","b",1.0]')]
    renewal = rows(fold_key(pd.DataFrame(
        state + [update(9, "insert", src="a", dst="b", cost=1.0)])))
    assert set(renewal) == {"v9"}  # v1 untouched: it stays live beside v9
    replaced = rows(fold_key(pd.DataFrame(
        state + [update(9, "insert", src="a", dst="b", cost=2.0)])))
    assert replaced["v1"]["death"] == "replaced" and replaced["v1"]["born"] is False
    assert replaced["v9"]["death"] is None


def test_sensor_position_change_is_a_replacement_triggered_is_always_renewal() -> None:
    sensor = [live("v1", 1, '["s1",1.0,2.0]', relation="sensor", key='["s1"]'),
              update(5, "insert", relation="sensor", key='["s1"]', id="s1", x=1.0, y=3.0)]
    assert rows(fold_key(pd.DataFrame(sensor)))["v1"]["death"] == "replaced"
    trig = [live("v1", 1, '["s1"]', relation="triggered", key='["s1"]'),
            update(5, "insert", relation="triggered", key='["s1"]', id="s1")]
    assert set(rows(fold_key(pd.DataFrame(trig)))) == {"v5"}


def test_delete_of_a_key_not_live_is_a_note() -> None:
    out = fold_key(pd.DataFrame([update(3, "delete", key='["n1","n9"]', src="n1", dst="n9")]))
    assert out["row_kind"].tolist() == ["note"]
    assert out["note"].iloc[0] == "delete of link n1→n9 ignored: not live"
    assert out["note_seq"].iloc[0] == 3


def test_ttl_and_event_time_give_expiry() -> None:
    event = pd.Timestamp("2026-03-01 12:00:00")
    out = rows(fold_key(pd.DataFrame([
        update(1, "insert", src="a", dst="b", cost=1.0, ttl_s=600.0, event_time=event),
        update(2, "insert", src="a", dst="b", cost=1.0, ttl_s=30.0),
    ])))
    assert out["v1"]["inserted_at"] == event
    assert out["v1"]["expires_at"] == event + pd.Timedelta(seconds=600)
    assert out["v2"]["expires_at"] == T0 + pd.Timedelta(seconds=30)  # ingested_at + ttl


@settings(max_examples=60, deadline=None)
@given(
    ops=st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["insert", "delete"]),
                           st.sampled_from([1.0, 2.0])), min_size=1, max_size=12),
    live_before=st.sets(st.sampled_from(["a", "b", "c"])),
    cuts=st.lists(st.integers(min_value=0, max_value=15), max_size=4),
    rng=st.randoms(use_true_random=False),
)
def test_a_sorted_stream_folds_key_by_key_wherever_its_frames_are_cut(
        ops: list[tuple[str, str, float]], live_before: set[str], cuts: list[int],
        rng: random.Random) -> None:
    rows = [update(seq, op, key=f'["{src}","z"]', src=src, dst="z", cost=cost)
            for seq, (src, op, cost) in enumerate(ops, start=1)]
    rows += [live(f"v0{src}", 0, f'["{src}","z",1.0]', key=f'["{src}","z"]')
             for src in sorted(live_before)]
    rng.shuffle(rows)  # sorted by key only, as sortWithinPartitions leaves a key's rows
    ordered = pd.DataFrame(sorted(rows, key=lambda r: r["key"]))
    bounds = sorted({0, len(ordered), *(c for c in cuts if c < len(ordered))})
    stream = [ordered.iloc[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    expected = [r for _, group in ordered.groupby("key", sort=True)
                for r in records(fold_key(group))]
    folded = [r for frame in fold_sorted(stream) for r in records(frame)]
    assert folded == expected


def records(frame: pd.DataFrame) -> list[dict]:
    """The frame's rows, every missing value as None."""
    return [{c: None if pd.isna(v) else v for c, v in r.items()} for r in frame.to_dict("records")]


def test_a_fractional_ttl_expires_at_a_whole_microsecond() -> None:
    """Spark's timestamps are microseconds: nanoseconds from ``event_time + ttl_s`` would make
    the pandas → Arrow conversion of apply fail for every rerun."""
    import pyarrow as pa

    group = pd.DataFrame([update(1, "insert", src="a", dst="b", cost=1.0, ttl_s=57.3478123456,
                                 event_time=pd.Timestamp("2026-01-01 00:00:00.000000999"))])
    frame = fold_key(group)
    expires = frame.loc[frame["row_kind"] == "instance", "expires_at"].iloc[0]
    assert expires == pd.Timestamp("2026-01-01 00:00:57.347813")
    assert expires.nanosecond == 0
    pa.Table.from_pandas(frame[["inserted_at", "expires_at"]],
                         schema=pa.schema([("inserted_at", pa.timestamp("us")),
                                           ("expires_at", pa.timestamp("us"))]),
                         preserve_index=False, safe=True)
