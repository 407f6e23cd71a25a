"""The two apply paths agree: random update logs applied and swept by the Spark path
(:mod:`aspen.lake.apply`, :mod:`aspen.lake.expire`) in one lake and by the in-process path
(:mod:`aspen.lake.apply_local`, :mod:`aspen.lake.expire_local`) in another give the same
registry, base tables, notes, apply state and update log; a run crashed on one path is rerun
by the other to the same tables; and the in-process path writes a tuple key's JSON exactly as
Spark's ``to_json(array(...))`` does."""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from apply_logs import DAY1, DAY2, T0, batches, crashed, log_batches, snapshot
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from aspen.lake.apply import apply_pending
from aspen.lake.apply_local import apply_in_process, key_json
from aspen.lake.expire import expire_due
from aspen.lake.expire_local import expire_in_process
from aspen.settings import Settings

pytestmark = [pytest.mark.spark, pytest.mark.slow]

#: Any text a key column can hold in Delta (Unicode without lone surrogates), control
#: characters included.
_KEY_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=10)


@hypothesis_settings(max_examples=15, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.lists(st.tuples(_KEY_TEXT, _KEY_TEXT), min_size=1, max_size=40))
def test_key_json_is_what_spark_to_json_writes(spark, keys: list[tuple[str, str]]) -> None:
    from pyspark.sql import functions as F

    frame = spark.createDataFrame(keys, "src STRING, dst STRING")
    written = [row[0] for row in frame.select(
        F.to_json(F.array(F.col("src"), F.col("dst")))).collect()]
    assert written == [key_json(list(key)) for key in keys]


#: Each round: batches logged, then an apply, then (maybe) a sweep this many seconds after T0.
_ROUNDS = st.lists(
    st.tuples(batches(max_batches=3, max_records=5),
              st.one_of(st.none(), st.sampled_from((60, 100, 700)))),
    min_size=1, max_size=3)


@hypothesis_settings(max_examples=6, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow,
                                            HealthCheck.function_scoped_fixture])
@given(rounds=_ROUNDS)
def test_spark_and_in_process_apply_and_sweep_give_the_same_tables(
        spark, rounds: list[tuple[list[list[dict]], int | None]]) -> None:
    with tempfile.TemporaryDirectory() as root:
        on_spark = Settings(lake=str(Path(root) / "spark"))
        in_process = Settings(lake=str(Path(root) / "in-process"))
        for logged, sweep_after in rounds:
            for lake in (on_spark, in_process):
                log_batches(lake, logged)
            assert apply_pending(spark, on_spark, in_process=False) == apply_in_process(
                in_process)
            if sweep_after is not None:
                now = T0 + timedelta(seconds=sweep_after)
                assert expire_due(spark, on_spark, now, in_process=False) == expire_in_process(
                    in_process, now)
            assert snapshot(on_spark) == snapshot(in_process)


@pytest.mark.parametrize(("point", "crashing_path"), [
    ("apply:after-merge-variables", "spark"), ("apply:after-merge-sensor", "spark"),
    ("apply:after-merge-link", "in_process"), ("apply:after-merge-apply_notes", "in_process"),
])
def test_an_apply_crashed_on_one_path_is_rerun_by_the_other(spark, tmp_path: Path, point: str,
                                                            crashing_path: str) -> None:
    clean = Settings(lake=str(tmp_path / "clean"))
    lake = Settings(lake=str(tmp_path / "crashed"))
    for settings in (clean, lake):
        log_batches(settings, [DAY1])
    apply_in_process(clean)
    apply_pending(spark, lake, in_process=crashing_path == "in_process")
    for settings in (clean, lake):
        log_batches(settings, [DAY2])
    apply_in_process(clean)
    first = crashing_path == "in_process"
    assert crashed(lambda: apply_pending(spark, lake, in_process=first), point)
    assert apply_pending(spark, lake, in_process=not first).batches == [2]
    assert snapshot(lake) == snapshot(clean)
