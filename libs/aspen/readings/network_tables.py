"""What a stream network writes, the networks a lake ran, and a network run in process.

A network's micro-batch (the rows its groups emitted, :func:`group_frame`) becomes rows of two
tables, each replacing what a crashed run of the same micro-batch wrote (``stream_batch``):

- ``network_outputs``: one row per final output — network, ``output`` (its deterministic id
  as JSON), ``grp`` (the group it ran in: a sensor, or ``""``), ``ts``, its attributes
  (``data``, JSON), the covering interval of its readings' ids per input stream (``cover``,
  JSON; ``ids_lo``/``ids_hi`` their hull), and in Reduced-Eager mode the ids themselves
  (``provenance``, per stream full or as a delta against the output ``prov_base`` names:
  :class:`aspen.streams.encoding.PerStreamEncoder`);
- ``network_drops``: every reading a group dropped, with its reason.

``stream_networks`` binds a network's name to its definition and provenance mode.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aspen.crashpoints import crash_point
from aspen.errors import ConfigError
from aspen.lake import deltars, tables
from aspen.readings.driver import require_readings
from aspen.readings.modes import KEEP
from aspen.readings.rule_rows import frame_of
from aspen.readings.rule_tables import drops_arrow, replace_stream_batch
from aspen.settings import Settings
from aspen.streams.algebra import Reading
from aspen.streams.encoding import PerStreamEncoder
from aspen.streams.incremental import NetworkState, NetworkStep
from aspen.streams.networks import StreamNetwork, load_network

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Hashable

    import pandas as pd
    import pyarrow as pa

__all__ = [
    "NETWORK_DROPS", "NETWORK_OUTPUTS", "OUTPUT_DDL", "STREAM_NETWORKS", "group_frame",
    "load_recorded_network", "output_id", "output_text", "record_network", "recorded_networks",
    "run_network_locally",
    "write_network_batch",
]

NETWORK_OUTPUTS = "network_outputs"
NETWORK_DROPS = "network_drops"
STREAM_NETWORKS = "stream_networks"

#: What a group emits per micro-batch: outputs and drops in one row type.
OUTPUT_DDL = (
    "kind STRING, output STRING, grp STRING, ts DOUBLE, data STRING, cover STRING, "
    "ids_lo BIGINT, ids_hi BIGINT, provenance BINARY, prov_base STRING, id BIGINT, "
    "sensor STRING, ts_us BIGINT, value DOUBLE, reason STRING"
)
_COLUMNS = [column.split()[0] for column in OUTPUT_DDL.split(", ")]


def output_text(row_id: Hashable) -> str:
    """An output's id as JSON text (tuples as lists).

    >>> output_text(("w", "s1", 60.0))
    '["w", "s1", 60.0]'
    """
    return json.dumps(row_id, ensure_ascii=False)


def output_id(text: str) -> Hashable:
    """The id :func:`output_text` wrote (lists back to tuples).

    >>> output_id('["w", "s1", 60.0]')
    ('w', 's1', 60.0)
    """
    def tupled(value: Any) -> Any:
        return tuple(tupled(v) for v in value) if isinstance(value, list) else value

    return tupled(json.loads(text))


def group_frame(group: str, step: NetworkStep, encoder: PerStreamEncoder | None = None
                ) -> pd.DataFrame:
    """One group's step as the rows its stateful operator emits (columns of ``OUTPUT_DDL``);
    with the group's ``encoder`` (Reduced-Eager), each output's ids per input stream, in the
    order the outputs are written, full or as a delta whose base output ``prov_base`` names."""
    rows: list[dict[str, Any]] = []
    for out in step.outputs:
        cover = {stream: list(pair) for stream, pair in out.cov.items()}
        provenance, bases = (None, {}) if encoder is None else encoder.encode(out.prov, out.id)
        rows.append({
            "kind": "output", "output": output_text(out.id), "grp": group,
            "ts": float(out.data.get("ts", "nan")), "data": json.dumps(dict(out.data)),
            "cover": json.dumps(cover),
            "ids_lo": min((lo for lo, _hi in out.cov.values()), default=None),
            "ids_hi": max((hi for _lo, hi in out.cov.values()), default=None),
            "provenance": provenance,
            "prov_base": json.dumps({s: output_text(b) for s, b in bases.items()})
            if bases else None,
        })
    for reading, reason in step.dropped:
        rows.append({"kind": "drop", "grp": group, "id": reading.id, "sensor": reading.sensor,
                     "ts_us": round(reading.ts * 1_000_000), "value": reading.value,
                     "reason": reason})
    return frame_of(rows, OUTPUT_DDL)


# --- the networks a lake ran -----------------------------------------------------------------

def load_recorded_network(settings: Settings, name: str) -> tuple[StreamNetwork, str] | None:
    """Network ``name`` as this lake ran it, and its provenance mode (None: never ran)."""
    return next(((network, mode) for network, mode in recorded_networks(settings)
                 if network.name == name), None)


def recorded_networks(settings: Settings) -> list[tuple[StreamNetwork, str]]:
    """Every network this lake ran, by name, with its mode."""
    if not deltars.table_exists(settings, STREAM_NETWORKS):
        return []
    known = deltars.read_table(settings, STREAM_NETWORKS, ["name", "definition", "mode"])
    known = known.sort_values("name").drop_duplicates("name")
    return [(load_network(text), str(mode))
            for text, mode in zip(known["definition"], known["mode"], strict=True)]


def record_network(settings: Settings, network: StreamNetwork, mode: str) -> None:
    """Record ``network`` and ``mode`` under its name; a name that ran with another definition
    or mode is refused (its checkpointed state and outputs belong to that one)."""
    import pyarrow as pa

    known = load_recorded_network(settings, network.name)
    if known is not None and (known[0].canonical(), known[1]) == (network.canonical(), mode):
        return
    if known is not None:
        raise ConfigError(f"network '{network.name}' already ran with another definition or "
                          f"provenance mode ({known[1]}); give this one another name")
    deltars.append_table(settings, STREAM_NETWORKS, pa.table({
        "name": pa.array([network.name], pa.string()),
        "definition": pa.array([network.canonical()], pa.string()),
        "mode": pa.array([mode], pa.string()),
        "recorded_at": pa.array([datetime.now(UTC)], pa.timestamp("us", tz="UTC")),
    }))


# --- one micro-batch -------------------------------------------------------------------------

def _outputs_arrow(network: StreamNetwork, mode: str, frame: pd.DataFrame, stream_batch: int,
                   readings_version: int) -> pa.Table:
    import pyarrow as pa

    out = frame[frame["kind"] == "output"].sort_values(["grp", "ts", "output"])
    count = len(out)
    provenance = list(out["provenance"]) if mode == "eager" else [None] * count
    return pa.table({
        "network": pa.array([network.name] * count, pa.string()),
        "output": pa.array(out["output"], pa.string()),
        "grp": pa.array(out["grp"], pa.string()),
        "ts": pa.array(out["ts"].astype(float), pa.float64()),
        "data": pa.array(out["data"], pa.string()),
        "cover": pa.array(out["cover"], pa.string()),
        "ids_lo": pa.array(out["ids_lo"].astype("Int64"), pa.int64()),
        "ids_hi": pa.array(out["ids_hi"].astype("Int64"), pa.int64()),
        "provenance": pa.array([None if p is None else bytes(p) for p in provenance],
                               pa.binary()),
        "prov_base": pa.array(out["prov_base"] if mode == "eager" else [None] * count,
                              pa.string()),
        "mode": pa.array([mode] * count, pa.string()),
        "stream_batch": pa.array([stream_batch] * count, pa.int64()),
        "readings_version": pa.array([readings_version] * count, pa.int64()),
    })


def write_network_batch(settings: Settings, network: StreamNetwork, mode: str,
                        frame: pd.DataFrame, stream_batch: int) -> tuple[int, int]:
    """Write micro-batch ``stream_batch`` of ``network`` from ``frame``: its outputs and drops,
    each replacing what a crashed run of the batch wrote. Returns (outputs, drops)."""
    if frame.empty:
        return 0, 0
    version = (deltars.table_version(settings, tables.READINGS)
               if deltars.table_exists(settings, tables.READINGS) else -1)
    outputs = _outputs_arrow(network, mode, frame, stream_batch, version)
    drops = drops_arrow("network", network.name, frame, stream_batch)
    replace_stream_batch(settings, NETWORK_OUTPUTS, outputs, stream_batch, "network",
                         network.name)
    crash_point("network:after-outputs")
    replace_stream_batch(settings, NETWORK_DROPS, drops, stream_batch, "network", network.name)
    return outputs.num_rows, drops.num_rows


def readings_of(frame: pd.DataFrame) -> list[Reading]:
    """Readings (id, sensor, ts in seconds, value) from rows with ``ts_us`` or ``ts``."""
    import pandas as pd

    if "ts_us" in frame:
        times = [int(t) / 1e6 for t in frame["ts_us"]]
    else:
        times = [pd.Timestamp(t).value / 1e9 for t in frame["ts"]]
    return [Reading(int(i), str(s), t, float(v)) for i, s, t, v in
            zip(frame["id"], frame["sensor"], times, frame["value"], strict=True)]


def run_network_locally(settings: Settings, network: StreamNetwork, mode: str = "eager",
                        stream_batch: int = 0) -> tuple[int, int]:
    """Run ``network`` over every reading of the lake in process, each group from a fresh
    state, and write the result as micro-batch ``stream_batch``; outputs not final at the last
    reading stay unwritten, as in the stream. Returns (outputs, drops)."""
    import pandas as pd

    require_readings(settings)
    record_network(settings, network, mode)
    readings = deltars.read_table(settings, tables.READINGS, ["id", "sensor", "ts", "value"])
    readings = readings.sort_values("id")
    keys = readings["sensor"] if network.partition else pd.Series([""] * len(readings))
    frames = []
    for group, rows in readings.groupby(keys.values, sort=True):
        state = NetworkState(network, KEEP[mode])
        frames.append(group_frame(str(group), state.step(readings_of(rows)), state.encoder))
    frame = pd.concat(frames, ignore_index=True) if frames else group_frame(
        "", NetworkStep([], []))
    return write_network_batch(settings, network, mode, frame, stream_batch)
