"""The two reading streams share one driver: the same checks before a run, in the same words,
naming the flag ``aspen stream`` really has; and the crash points below the lake fire only where
``ASPEN_CRASH_AT`` names them. No Spark session is started: every refusal comes before one is
used."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aspen.crashpoints import CRASH_AT, crash_point, crash_requested
from aspen.errors import ConfigError, InjectedCrash
from aspen.lake.ingest import ingest_data
from aspen.readings.driver import check_mode
from aspen.readings.modes import KEEP, MODES
from aspen.readings.network_stream import run_network_stream
from aspen.readings.rule_stream import run_reading_stream
from aspen.settings import Settings
from aspen.streams.networks import load_network
from aspen.streams.rules import TriggerRule
from aspen.streams.zones import ZoneRule

NETWORK = load_network('{"name": "n", "query": {"stream": "readings"}}')


def _provenance_choices() -> tuple[str, ...]:
    from aspen.cli.stream import register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    stream = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flag = next(a for a in stream.choices["stream"]._actions if "--provenance" in a.option_strings)
    return tuple(flag.choices)


def test_the_modes_are_the_cli_s_provenance_choices() -> None:
    assert _provenance_choices() == MODES
    assert set(KEEP) == set(MODES)


@given(st.text(max_size=12))
def test_a_mode_is_refused_naming_the_provenance_flag(mode: str) -> None:
    if mode in MODES:
        check_mode(mode)
        return
    with pytest.raises(ConfigError) as refused:
        check_mode(mode)
    assert str(refused.value) == f"--provenance must be one of eager, lazy, none, got {mode!r}"


@pytest.mark.parametrize("rule", [TriggerRule(), ZoneRule()])
def test_both_drivers_refuse_a_bad_mode_in_the_same_words(lake: Settings, rule) -> None:
    with pytest.raises(ConfigError) as by_rule:
        run_reading_stream(None, lake, rule, "full")  # type: ignore[arg-type]
    with pytest.raises(ConfigError) as by_network:
        run_network_stream(None, lake, NETWORK, "full")  # type: ignore[arg-type]
    assert str(by_rule.value) == str(by_network.value)
    assert str(by_rule.value).startswith("--provenance must be one of")


def test_both_drivers_refuse_a_lake_without_readings_in_the_same_words(lake: Settings) -> None:
    ingest_data(lake, [("links.jsonl", b'{"op": "insert", "relation": "link", '
                                      b'"src": "a", "dst": "b", "cost": 1}\n')])
    with pytest.raises(ConfigError) as by_rule:
        run_reading_stream(None, lake, TriggerRule(), "lazy")  # type: ignore[arg-type]
    with pytest.raises(ConfigError) as by_network:
        run_network_stream(None, lake, NETWORK, "lazy")  # type: ignore[arg-type]
    assert str(by_rule.value) == str(by_network.value)
    assert str(by_rule.value) == f"no readings under {lake.lake_uri} yet: ingest some first"


#: Names a crash point can have (an environment value: no NUL, no surrogates).
POINTS = st.text(st.sampled_from("abz:-_019"), min_size=1, max_size=6)


@given(POINTS, POINTS)
def test_a_crash_point_fires_only_where_named(named: str, point: str) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CRASH_AT, named)
        patch.delenv("ASPEN_CRASH_MODE", raising=False)
        assert crash_requested(point) == (named == point)
        if named == point:
            with pytest.raises(InjectedCrash, match="ASPEN_CRASH_AT"):
                crash_point(point)
        else:
            crash_point(point)


def test_a_spark_task_crash_point_never_fires_outside_a_task(monkeypatch) -> None:
    from aspen.pipeline.faults import task_crash_point

    monkeypatch.setenv(CRASH_AT, "task:after-publish")
    task_crash_point("task:after-publish")  # no TaskContext: nothing happens
