"""The variable registry: fresh variable per insertion instance, liveness, expiry, persistence."""

from __future__ import annotations

from datetime import datetime, timedelta

import pandas as pd
import pytest

from aspen.errors import ProvenanceError, UnknownKeyError
from aspen.provenance.registry import VariableInfo, VariableRegistry, tuple_key

T0 = datetime(2024, 5, 1, 12, 0, 0)


def sample() -> VariableRegistry:
    reg = VariableRegistry()
    reg.register("v1", "link", ("n1", "n2", 2.0), inserted_at=T0,
                 expires_at=T0 + timedelta(seconds=60))
    reg.register("v2", "sensor", ("s7", 10.0, 35.5), inserted_at=T0)
    reg.register("v3", "triggered", ("s7",), inserted_at=T0, expires_at=T0 + timedelta(seconds=30))
    reg.register("v4", "region_seed", ("r1", "s7"), inserted_at=T0)
    # TTL renewal of link(n1,n2): a new instance, a new variable
    reg.register("v5", "link", ("n1", "n2", 2.0), inserted_at=T0 + timedelta(seconds=50),
                 expires_at=T0 + timedelta(seconds=110))
    return reg


def test_fresh_variable_per_instance():
    reg = sample()
    assert reg.vars_of("link", ("n1", "n2")) == ["v1", "v5"]
    assert reg.vars_of("link", ("n1", "n2", 99.0)) == ["v1", "v5"]  # matched on the key
    assert [reg.info(v).instance for v in ("v1", "v5")] == [1, 2]
    assert reg.info("v5") == VariableInfo(
        "v5", "link", ("n1", "n2", 2.0), 2, T0 + timedelta(seconds=50),
        T0 + timedelta(seconds=110), None,
    )
    assert reg.vars_of("link", ("n2", "n1")) == []


def test_register_rejects_reuse_and_bad_names():
    reg = sample()
    with pytest.raises(ProvenanceError):
        reg.register("v1", "link", ("a", "b", 1.0))
    with pytest.raises(ProvenanceError):
        reg.register("", "link", ("a", "b", 1.0))


def test_kill_and_liveness():
    reg = sample()
    at = T0 + timedelta(seconds=61)
    killed = reg.kill("v1", at)
    assert killed.deleted_at == at and not killed.live
    assert reg.vars_of("link", ("n1", "n2")) == ["v5"]
    assert reg.live_vars() == {"v2", "v3", "v4", "v5"}
    assert reg.kill("v1", at + timedelta(seconds=5)).deleted_at == at  # first death kept
    reg.register("v6", "link", ("n1", "n2", 3.0))
    assert reg.info("v6").instance == 3  # instances keep counting after deaths
    with pytest.raises(UnknownKeyError):
        reg.kill("v404", at)
    with pytest.raises(ProvenanceError):
        reg.kill("v2", None)


def test_expired_is_inclusive_and_skips_dead():
    reg = sample()
    assert reg.expired(T0) == []
    assert reg.expired(T0 + timedelta(seconds=30)) == ["v3"]
    assert reg.expired(T0 + timedelta(seconds=200)) == ["v3", "v1", "v5"]
    reg.kill("v3", T0 + timedelta(seconds=30))
    assert reg.expired(T0 + timedelta(seconds=60)) == ["v1"]


def test_describe():
    reg = sample()
    assert [reg.describe(v) for v in ("v1", "v2", "v3", "v4")] == [
        "link(n1→n2)", "sensor(s7)", "triggered(s7)", "region_seed(r1,s7)",
    ]
    reg.register("w", "other", ("a", 1))
    assert reg.describe("w") == "other(a,1)"
    assert tuple_key("sensor", ["s1", 1.0, 2.0]) == ("s1",)


def test_rows_round_trip_including_a_data_frame():
    reg = sample()
    reg.kill("v3", T0 + timedelta(seconds=31))
    rows = reg.rows()
    assert {type(r["values_json"]) for r in rows} == {str}
    again = VariableRegistry.from_rows(rows)
    assert list(again) == list(reg)
    assert again.live_vars() == reg.live_vars()
    assert again.vars_of("link", ("n1", "n2")) == ["v1", "v5"]
    # through pandas (how a Delta table read comes back): None → NaT, datetimes → Timestamps
    frame = pd.DataFrame(rows)
    assert list(VariableRegistry.from_rows(frame.to_dict("records"))) == list(reg)
    iso = [{**r, "inserted_at": r["inserted_at"].isoformat()} for r in rows]
    assert list(VariableRegistry.from_rows(iso)) == list(reg)


def test_from_rows_rejects_bad_rows():
    with pytest.raises(ProvenanceError):
        VariableRegistry.from_rows([{"var": "v1", "relation": "link"}])
    with pytest.raises(ProvenanceError):
        VariableRegistry.from_rows([{"var": "v1", "relation": "link", "values_json": "[",
                                     "instance": 1}])
