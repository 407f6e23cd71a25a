"""The ``networks`` suites: the stream networks a lake ran, their outputs and their drops.

``stream_networks``, ``network_outputs`` and ``network_drops`` are written by the stream
networks (:mod:`aspen.readings.network_tables`, :mod:`aspen.readings.network_stream`). Rules:

- ``stream_networks``: one row per network name, a known provenance mode, a definition that
  parses (:func:`aspen.streams.networks.load_network`) as a network of the row's name;
- ``network_outputs``: one row per output of a network; ``grp`` never null; ``ts`` finite or
  null (an output without event time); a known mode, the mode its network is recorded with;
  Reduced-Eager and Replay-Lazy rows carry their covering interval (``ids_lo ≥ 1``,
  ``ids_lo ≤ ids_hi``, the hull of ``cover``), rows without provenance none; Reduced-Eager
  rows carry their provenance (never empty), Replay-Lazy and no-provenance rows none;
- ``network_drops``: a reason in {late}; a reading dropped at most once per network;
- cross-table: every network of the outputs and drops is recorded in ``stream_networks``
  (with a definition that parses as a network of its name); each Reduced-Eager output
  within the readings' retention (``ids_lo ≥`` the lowest retained reading id) decodes
  (:func:`aspen.streams.encoding.decode_per_stream`) to ids whose lowest and highest are
  ``ids_lo`` and ``ids_hi`` — per input stream, its interval in ``cover`` — all of them
  retained readings selected by their input stream's predicate and, when the network runs
  per sensor, readings of the output's ``grp`` sensor; each dropped reading within retention
  is in ``readings`` with its sensor, time and value.

Replay-Lazy outputs are not replayed by the gate: it would cost a replay per output (the
group's readings around its interval, or from its first retained reading for a count window
under a join, :func:`aspen.readings.network_provenance.output_ids`); only their interval is
checked (the rules above). ``aspen explain network NAME OUTPUT`` replays one.

>>> [s.table for s in NETWORK_SUITES]
['stream_networks', 'network_outputs', 'network_drops']
>>> NETWORK_SUITES[1].derived_columns
('provenance_length', 'cover_lo', 'cover_hi')
>>> import pandas as pd
>>> from aspen.streams.encoding import encode_per_stream
>>> readings = pd.DataFrame({"id": [7, 8], "sensor": ["s1", "s1"], "value": [1.0, 2.0],
...                          "ts": pd.to_datetime(["2026-01-01T00:00:01Z"] * 2)})
>>> outputs = pd.DataFrame({"network": ["n"], "output": ['["w", 0]'], "grp": ["s1"],
...                         "mode": ["eager"], "ids_lo": [7], "ids_hi": [8],
...                         "cover": ['{"readings": [7, 8]}'],
...                         "provenance": [encode_per_stream({"readings": {7, 8}})]})
>>> outputs_in_readings(outputs, {"readings": readings})[0]
True
>>> print(outputs_in_readings(outputs.assign(ids_hi=[9]), {"readings": readings})[1])
1 of 1 Reduced-Eager output(s) within retention: 1 not covered by [ids_lo, ids_hi], e.g. n/["w", 0]
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from aspen.lake.tables import READINGS
from aspen.quality.derived import add_provenance_length
from aspen.quality.expect import (
    at_least,
    finite,
    in_set,
    not_null,
    null,
    pair_at_least,
    pair_equal,
    unique,
)
from aspen.quality.lineage import (
    UNDECODABLE,
    LineageProblems,
    RetainedReadings,
    definitions_valid,
    drops_in_readings,
    recorded_in,
)
from aspen.quality.spec import CrossCheck, CrossCheckResult, SuiteParams, TableSuite
from aspen.readings.modes import MODES
from aspen.readings.network_tables import NETWORK_DROPS, NETWORK_OUTPUTS, STREAM_NETWORKS

if TYPE_CHECKING:
    import pandas as pd
    from great_expectations.expectations import Expectation

    from aspen.streams.networks import StreamNetwork

__all__ = [
    "NETWORK_COLUMNS",
    "NETWORK_DROP_COLUMNS",
    "NETWORK_DROP_REASONS",
    "NETWORK_SUITES",
    "OUTPUT_COLUMNS",
    "OUTPUT_PROBLEMS",
    "networks_of",
    "outputs_in_readings",
    "parse_definition",
]

FAMILY = "networks"
#: Why a network did not take a reading (:mod:`aspen.streams.incremental`).
NETWORK_DROP_REASONS: tuple[str, ...] = ("late",)
NETWORK_COLUMNS: tuple[str, ...] = ("name", "definition", "mode", "recorded_at")
OUTPUT_COLUMNS: tuple[str, ...] = (
    "network", "output", "grp", "ts", "data", "cover", "ids_lo", "ids_hi", "provenance",
    "prov_base", "mode", "stream_batch", "readings_version",
)
NETWORK_DROP_COLUMNS: tuple[str, ...] = (
    "network", "id", "sensor", "ts", "value", "reason", "stream_batch",
)
#: Columns derived from ``cover`` by :func:`_add_cover_hull`.
COVER_HULL: tuple[str, ...] = ("cover_lo", "cover_hi")
_EAGER = 'mode == "eager"'
_COVERED = 'mode in ["eager", "lazy"]'  # rows that keep their covering interval
_WITHOUT_IDS = 'mode in ["lazy", "none"]'
_NONE = 'mode == "none"'


# --- the expectations ------------------------------------------------------------------------

def _networks(_: SuiteParams) -> list[Expectation]:
    return not_null(*NETWORK_COLUMNS) + unique("name") + in_set("mode", MODES)


def _outputs(_: SuiteParams) -> list[Expectation]:
    out = not_null(*(c for c in OUTPUT_COLUMNS if c not in ("ts", "ids_lo", "ids_hi",
                                                            "provenance", "prov_base")))
    out += unique("network", "output") + finite("ts") + in_set("mode", MODES)
    # the covering interval: kept unless the network keeps no provenance, the cover's hull
    out += not_null("ids_lo", "ids_hi", *COVER_HULL, where=_COVERED)
    out += null("ids_lo", "ids_hi", where=_NONE)
    out += at_least("ids_lo", 1) + pair_at_least("ids_hi", "ids_lo")
    out += pair_equal("ids_lo", "cover_lo") + pair_equal("ids_hi", "cover_hi")
    # Reduced-Eager rows carry their ids (never empty), the other modes none
    out += not_null("provenance", where=_EAGER) + at_least("provenance_length", 1)
    out += null("provenance", "prov_base", where=_WITHOUT_IDS)
    out += at_least("stream_batch", 0) + at_least("readings_version", 0)
    return out


def _drops(_: SuiteParams) -> list[Expectation]:
    out = not_null(*NETWORK_DROP_COLUMNS) + unique("network", "id")
    out += in_set("reason", NETWORK_DROP_REASONS) + at_least("id", 1)
    out += at_least("stream_batch", 0)
    return out


def _cover(text: Any) -> dict[str, tuple[int, int]] | None:
    """The covering intervals a ``cover`` holds, by stream (None when it holds none).

    >>> _cover('{"a": [3, 5], "b": [1, 2]}'), _cover("{"), _cover('{"a": [3]}')
    ({'a': (3, 5), 'b': (1, 2)}, None, None)
    """
    try:
        found = json.loads(text)
        return {str(stream): (int(lo), int(hi)) for stream, (lo, hi) in found.items()}
    except (TypeError, ValueError, AttributeError):  # not text, not JSON, not {s: [lo, hi]}
        return None


def _add_cover_hull(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with ``cover_lo`` and ``cover_hi``, the hull of its ``cover`` (null
    when the cover is null, empty or not ``{stream: [lo, hi]}``)."""
    import pandas as pd

    covers = [_cover(v) for v in frame["cover"]] if "cover" in frame else [None] * len(frame)
    nan = float("nan")
    out = frame.copy()
    out["cover_lo"] = pd.Series([min(lo for lo, _ in c.values()) if c else nan for c in covers],
                                index=frame.index, dtype="float64")
    out["cover_hi"] = pd.Series([max(hi for _, hi in c.values()) if c else nan for c in covers],
                                index=frame.index, dtype="float64")
    return out


def _derive_outputs(frame: pd.DataFrame) -> pd.DataFrame:
    return _add_cover_hull(add_provenance_length(frame))


# --- the networks recorded -------------------------------------------------------------------

def parse_definition(definition: Any) -> StreamNetwork | None:
    """The network a ``stream_networks`` definition holds (None when it holds none).

    >>> parse_definition('{"name": "n", "query": {"stream": "readings"}}').partition
    'sensor'
    >>> parse_definition('{"name": "n"}') is None, parse_definition(None) is None
    (True, True)
    """
    from aspen.streams.networks import load_network

    try:
        return load_network(definition)
    except Exception:  # not text, not JSON, not an object, an invalid network …
        return None


def networks_of(tables: Mapping[str, pd.DataFrame]) -> dict[str, tuple[StreamNetwork, str]]:
    """The networks recorded in ``stream_networks`` and their modes, by name (one whose
    definition does not parse as a network of its name is left out)."""
    if STREAM_NETWORKS not in tables:
        return {}
    frame = tables[STREAM_NETWORKS]
    found = {}
    for name, definition, mode in zip(frame["name"], frame["definition"], frame["mode"],
                                      strict=True):
        network = parse_definition(definition)
        if network is not None and network.name == name:
            found[str(name)] = (network, str(mode))
    return found


def _modes_recorded(frame: pd.DataFrame, tables: Mapping[str, pd.DataFrame]) -> CrossCheckResult:
    """Each output has the provenance mode its network is recorded with (outputs of networks
    not recorded are :data:`_RECORDED`'s to report)."""
    if STREAM_NETWORKS not in tables:
        return None
    known = networks_of(tables)
    rows = frame.dropna(subset=["network", "mode"])
    bad = sorted({str(network) for network, mode in zip(rows["network"], rows["mode"],
                                                        strict=True)
                  if str(network) in known and mode != known[str(network)][1]})
    if bad:
        return False, (f"{len(bad)} network(s) with outputs of another mode than the one "
                       f"recorded in '{STREAM_NETWORKS}', e.g. {bad[:5]}")
    return True, f"{len(rows)} output(s), each of its network's recorded mode"


# --- the readings behind Reduced-Eager outputs -----------------------------------------------

#: The ways a Reduced-Eager output's readings can be wrong, in the order they are reported.
OUTPUT_PROBLEMS: tuple[str, ...] = (
    "not decodable",
    "not covered by [ids_lo, ids_hi]",
    "not covered by its cover",
    "not in readings",
    "of another group",
    "not of its input stream",
)


@dataclass
class _Problems(LineageProblems):
    """The Reduced-Eager outputs found wrong, by problem, with a few examples each."""

    PROBLEMS: ClassVar[tuple[str, ...]] = OUTPUT_PROBLEMS
    ROWS: ClassVar[str] = "Reduced-Eager output(s)"

    def notes(self) -> str:
        notes = [f"{self.past_retention} past it"] if self.past_retention else []
        if self.not_replayed:
            notes.append(f"{self.not_replayed} Replay-Lazy output(s) not replayed")
        return f" ({'; '.join(notes)})" if notes else ""


def _decoded(row: Mapping[str, Any],
             stored: Mapping[tuple[str, str], Any]) -> dict[str, tuple[int, ...]] | None:
    """An output's ids per input stream (None when they cannot be decoded, or one is empty);
    a stream written as a delta is decoded against the full set its base output (named in
    ``prov_base``, looked up in ``stored``: (network, output) → provenance) carries."""
    import json

    from aspen.streams.encoding import decode_per_stream

    data = row["provenance"]
    if not isinstance(data, bytes | bytearray):
        return None
    try:
        named = json.loads(row["prov_base"]) if isinstance(row.get("prov_base"), str) else {}
        bases = {stream: decode_per_stream(bytes(stored[(str(row["network"]), base)]))[stream]
                 for stream, base in named.items()}
        found = decode_per_stream(bytes(data), bases)
    except (*UNDECODABLE, KeyError, TypeError, ValueError):
        return None
    return found if found and all(found.values()) else None


def _check_output(row: Mapping[str, Any], ids: dict[str, tuple[int, ...]],
                  retained: RetainedReadings, network: StreamNetwork | None,
                  problems: _Problems, label: str) -> None:
    every = tuple(sorted({i for part in ids.values() for i in part}))
    if (every[0], every[-1]) != (int(row["ids_lo"]), int(row["ids_hi"])):
        problems.add("not covered by [ids_lo, ids_hi]", label)
    if _cover(row.get("cover")) != {s: (min(part), max(part)) for s, part in ids.items()}:
        problems.add("not covered by its cover", label)
    found = retained.positions(every)
    if found is None:
        problems.add("not in readings", label)
        return
    if network is None:  # not recorded: _RECORDED reports it
        return
    if network.partition and (retained.sensors[found] != str(row["grp"])).any():
        problems.add("of another group", label)
    for stream, part in ids.items():
        predicate = network.streams.get(stream)
        where = retained.positions(part)
        if predicate is None or where is None or not all(
                predicate(retained.attributes(int(p))) for p in where):
            problems.add("not of its input stream", label)
            return


def outputs_in_readings(frame: pd.DataFrame,
                        tables: Mapping[str, pd.DataFrame]) -> CrossCheckResult:
    """Each Reduced-Eager output within retention decodes to ids whose lowest and highest are
    ``ids_lo`` and ``ids_hi`` (per input stream, its ``cover``), all of them retained readings
    selected by their stream's predicate and, for a network run per sensor, readings of the
    output's ``grp``. Replay-Lazy outputs are counted, not replayed."""
    if READINGS not in tables:
        return None
    retained = RetainedReadings.of(tables[READINGS])
    networks = networks_of(tables)
    frame = frame.dropna(subset=["network", "output", "mode", "ids_lo", "ids_hi"])
    stored = {(str(n), str(o)): p for n, o, p in
              zip(frame["network"], frame["output"], frame["provenance"], strict=True)}
    problems = _Problems()
    for row in frame.to_dict("records"):
        if row["mode"] != "eager":
            problems.not_replayed += row["mode"] == "lazy"
            continue
        if retained.lowest is None or int(row["ids_lo"]) < retained.lowest:
            problems.past_retention += 1
            continue
        problems.checked += 1
        label = f"{row['network']}/{row['output']}"
        ids = _decoded(row, stored)
        if ids is None:
            problems.add("not decodable", label)
            continue
        network = networks.get(str(row["network"]))
        _check_output(row, ids, retained, None if network is None else network[0], problems,
                      label)
    return problems.result()


#: Every network of the frame is recorded in ``stream_networks`` (with a definition that parses
#: as a network of its name).
_RECORDED = CrossCheck("aspen_network_recorded", ("network",),
                       recorded_in(STREAM_NETWORKS, "network", networks_of))

NETWORK_SUITES: tuple[TableSuite, ...] = (
    TableSuite(FAMILY, STREAM_NETWORKS, NETWORK_COLUMNS, _networks, cross_checks=(
        CrossCheck("aspen_network_definition_valid", ("name", "definition"),
                   definitions_valid(parse_definition, "network")),)),
    TableSuite(FAMILY, NETWORK_OUTPUTS, OUTPUT_COLUMNS, _outputs, derive=_derive_outputs,
               derived_columns=("provenance_length", *COVER_HULL), cross_checks=(
                   CrossCheck("aspen_output_ids_in_readings",
                              ("provenance", "cover", "ids_lo", "ids_hi", "grp"),
                              outputs_in_readings),
                   _RECORDED,
                   CrossCheck("aspen_network_mode_recorded", ("network", "mode"),
                              _modes_recorded))),
    TableSuite(FAMILY, NETWORK_DROPS, NETWORK_DROP_COLUMNS, _drops, cross_checks=(
        CrossCheck("aspen_drop_ids_in_readings", ("id", "sensor", "ts", "value"),
                   drops_in_readings),
        _RECORDED)),
)
