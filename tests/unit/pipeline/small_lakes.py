"""Small lakes for the pipeline's tests: a four-router network with three sensors in a row,
random link and trigger updates over it, and lakes made by ingesting and maintaining them
in process (a template lake copied per example)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from itertools import count
from pathlib import Path

from hypothesis import strategies as st

from aspen.lake.ingest import ingest_files
from aspen.pipeline.maintain_local import maintain_local
from aspen.settings import Settings

NODES = "abcd"
SENSORS = {"s1": (0.0, 0.0), "s2": (5.0, 0.0), "s3": (10.0, 0.0)}


def first_records(links: list[tuple[str, str, float]]) -> list[dict]:
    """Insert ``links`` (src, dst, cost), the sensors, region r1 seeded at s1, every sensor
    triggered."""
    return [
        *({"op": "insert", "relation": "link", "src": s, "dst": d, "cost": c}
          for s, d, c in links),
        *({"op": "insert", "relation": "sensor", "id": s, "x": x, "y": y}
          for s, (x, y) in SENSORS.items()),
        {"op": "insert", "relation": "region_seed", "region": "r1", "id": "s1"},
        *({"op": "insert", "relation": "triggered", "id": s} for s in SENSORS),
    ]


link_op = st.builds(
    lambda op, src, dst, cost: ({"op": op, "relation": "link", "src": src, "dst": dst,
                                 "cost": cost} if op == "insert" else
                                {"op": op, "relation": "link", "src": src, "dst": dst}),
    st.sampled_from(["insert", "delete"]), st.sampled_from(NODES), st.sampled_from(NODES),
    st.sampled_from([1.0, 2.0, 4.0]))
sensor_op = st.builds(lambda op, s: {"op": op, "relation": "triggered", "id": s},
                      st.sampled_from(["insert", "delete"]), st.sampled_from(sorted(SENSORS)))
#: One batch's updates: 1–4 link or trigger changes.
batch_st = st.lists(st.one_of(link_op, sensor_op), min_size=1, max_size=4)


def maintain_batch(lake: Settings, records: list[dict], name: str) -> None:
    """Ingest ``records`` as the file ``name``.jsonl beside the lake, then maintain in process."""
    path = Path(lake.lake).parent / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    ingest_files(lake, [path])
    maintain_local(lake)


def template_lake(root: Path, records: list[dict]) -> Path:
    """A lake under ``root`` with one committed batch of ``records`` (copied per example)."""
    lake = Settings(lake=str(root / "lake"))
    maintain_batch(lake, records, "first")
    return root / "lake"


_copies: Iterator[int] = count()


def copy_lake(template: Path, tmp_path: Path) -> Settings:
    """A fresh copy of the lake at ``template`` under ``tmp_path``."""
    target = tmp_path / f"copy-{next(_copies)}" / "lake"
    shutil.copytree(template, target)
    return Settings(lake=str(target))
