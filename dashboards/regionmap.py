"""The sensor-region map: sensors on the grid (metres, to scale) with the regions they are in.

A sensor may be in several regions at once (regions grow from different seeds over the same
triggered sensors), so each region is drawn as its own trace of coloured rings, a sensor's k-th
region one ring further out: a sensor in three regions shows three rings, none hides another.
Seeds are stars labelled with their region, sensors in no region are grey, and a triggered
sensor is filled where one that is not is hollow. :func:`region_table` and
:func:`sensor_table` are the same data as tables.

Lake text (sensor and region ids) reaches the chart only as plain text: HTML-escaped, with
``$`` written as an entity so that no id renders as markup, a link or math.

>>> import pandas as pd
>>> placed = pd.DataFrame({"sensor": ["s1", "s1"], "x": [0.0, 0.0], "y": [0.0, 0.0],
...                        "region": ["r1", "r2"], "triggered": [True, True]})
>>> [t.name for t in region_figure(placed, pd.DataFrame(columns=["region", "id"])).data]
['region r1 (1 sensor)', 'region r2 (1 sensor)', 'triggered']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd
import plotly.graph_objects as go
from lakeview import NO_REGION, plain

__all__ = [
    "LOST_COLOUR",
    "REGION_COLOURS",
    "REGION_TABLE_COLUMNS",
    "SENSOR_TABLE_COLUMNS",
    "plain",
    "region_figure",
    "region_table",
    "sensor_table",
]

#: Ring colours of the regions, in turn (no grey: that is "no region"; no red: that is "lost").
REGION_COLOURS: tuple[str, ...] = (
    "#1F77B4", "#FF7F0E", "#2CA02C", "#9467BD", "#8C564B", "#E377C2", "#BCBD22", "#17BECF",
)
#: Colour of the X on a sensor lost in a what-if.
LOST_COLOUR = "#D62728"
#: Sensors in a region, and sensors in none.
_IN_REGION_COLOUR = "#222222"
_NO_REGION_COLOUR = "#9E9E9E"
#: Marker size of a sensor, of its innermost region ring (wider than a seed's star, so none is
#: hidden) and the step between rings.
_SENSOR_SIZE, _RING_SIZE, _RING_STEP = 7, 18, 7

#: Columns of :func:`region_table`.
REGION_TABLE_COLUMNS = ["region", "seed", "members", "triggered members", "size", "largest"]
#: Columns of :func:`sensor_table`.
SENSOR_TABLE_COLUMNS = ["sensor", "x (m)", "y (m)", "triggered", "regions", "seed of"]


def _number(value: float) -> str:
    return f"{value:g}"


def _seeds_by_sensor(seeds: pd.DataFrame | None) -> dict[str, list[str]]:
    """Sensor id → the regions it seeds (sorted), from ``region_seed`` rows (``region``,
    ``id``)."""
    if seeds is None or seeds.empty or not {"region", "id"} <= set(seeds.columns):
        return {}
    found: dict[str, set[str]] = {}
    for region, sensor in zip(seeds["region"].astype(str), seeds["id"].astype(str),
                              strict=True):
        found.setdefault(sensor, set()).add(region)
    return {sensor: sorted(regions) for sensor, regions in found.items()}


def _sensors(placed: pd.DataFrame) -> pd.DataFrame:
    """One row per sensor: ``sensor``, ``x``, ``y``, ``triggered`` and its sorted ``regions``
    (empty when in none)."""
    if placed.empty:
        return pd.DataFrame(columns=["sensor", "x", "y", "triggered", "regions"])
    frame = placed.assign(sensor=placed["sensor"].astype(str), region=placed["region"].astype(str))
    regions = (
        frame[frame["region"] != NO_REGION].groupby("sensor")["region"]
        .agg(lambda names: sorted(set(names)))
    )
    sensors = frame.groupby("sensor", sort=True).agg(
        x=("x", "first"), y=("y", "first"), triggered=("triggered", "any")
    ).reset_index()
    sensors["regions"] = [regions.get(s, []) for s in sensors["sensor"]]
    return sensors.astype({"x": float, "y": float, "triggered": bool})


def _hover(sensor: str, x: float, y: float, triggered: bool, regions: Sequence[str],
           seeded: Sequence[str]) -> str:
    """The hover text of one sensor, plain (:func:`plain`)."""
    lines = [
        f"sensor {plain(sensor)}",
        "regions: " + (", ".join(plain(r) for r in regions) if regions else "none"),
        f"triggered: {'yes' if triggered else 'no'}",
        f"x {_number(x)} m, y {_number(y)} m",
    ]
    if seeded:
        lines.append("seed of: " + ", ".join(plain(r) for r in seeded))
    return "<br>".join(lines)


def region_figure(
    placed: pd.DataFrame,
    seeds: pd.DataFrame | None,
    chains: Iterable[Sequence[str]] | None = None,
    lost: Iterable[str] | None = None,
) -> go.Figure:
    """The region map: every sensor of ``placed`` at its position, to scale, in metres.

    ``placed`` is :func:`lakeview.sensor_map`'s frame (one row per sensor and region: ``sensor``,
    ``x``, ``y``, ``region``, ``triggered``); ``seeds`` the ``region_seed`` rows (``region``,
    ``id``). Each region is one trace of rings in its own colour, a sensor's k-th region (by
    name) its k-th ring from the centre, so overlapping regions all show. Sensors are filled when
    triggered and hollow when not, dark in a region and grey in none; seeds are gold stars
    labelled with the regions they seed. ``chains`` (sensor-id lists, e.g. a why-chain from a
    seed to a member) are drawn as lines, ``lost`` sensors (a what-if) with a red X. Ids without
    a position are left out. The hover of a sensor lists its id, regions, whether it is
    triggered and its position.

    >>> placed = pd.DataFrame({"sensor": ["a", "b"], "x": [0.0, 10.0], "y": [0.0, 0.0],
    ...                        "region": ["r1", NO_REGION], "triggered": [True, False]})
    >>> seeds = pd.DataFrame({"region": ["r1"], "id": ["a"]})
    >>> figure = region_figure(placed, seeds, chains=[["a", "b"]], lost={"b"})
    >>> [t.name for t in figure.data]
    ['region r1 (1 sensor)', 'triggered', 'no region, not triggered', 'seed', 'chain to b', \
'lost']
    >>> figure.layout.yaxis.scaleanchor, [a.text for a in figure.layout.annotations]
    ('x', ['r1'])
    """
    sensors = _sensors(placed)
    seeded = _seeds_by_sensor(seeds)
    hovers = {
        row.sensor: _hover(row.sensor, row.x, row.y, row.triggered, row.regions,
                           seeded.get(row.sensor, []))
        for row in sensors.itertuples(index=False)
    }
    figure = go.Figure()

    # rings: one trace per region, the ring of a sensor's k-th region k steps out
    names = sorted({r for regions in sensors["regions"] for r in regions})
    for index, region in enumerate(names):
        members = sensors[[region in regions for regions in sensors["regions"]]]
        sizes = [_RING_SIZE + _RING_STEP * regions.index(region) for regions in members["regions"]]
        count = len(members)
        figure.add_trace(go.Scatter(
            x=members["x"], y=members["y"], mode="markers",
            name=f"region {plain(region)} ({count} sensor{'' if count == 1 else 's'})",
            marker={"symbol": "circle-open", "size": sizes,
                    "color": REGION_COLOURS[index % len(REGION_COLOURS)],
                    "line": {"width": 2.5}},
            hovertext=[hovers[s] for s in members["sensor"]], hoverinfo="text",
        ))

    # the sensors themselves: filled when triggered, hollow when not; grey when in no region
    in_region = sensors["regions"].map(bool)
    for region_mask, on, label, symbol, colour in (
        (in_region, True, "triggered", "circle", _IN_REGION_COLOUR),
        (in_region, False, "not triggered", "circle-open", _IN_REGION_COLOUR),
        (~in_region, True, "no region, triggered", "circle-open-dot", _NO_REGION_COLOUR),
        (~in_region, False, "no region, not triggered", "circle-open", _NO_REGION_COLOUR),
    ):
        chosen = sensors[region_mask & (sensors["triggered"] == on)]
        if chosen.empty:
            continue
        figure.add_trace(go.Scatter(
            x=chosen["x"], y=chosen["y"], mode="markers", name=label,
            marker={"symbol": symbol, "size": _SENSOR_SIZE, "color": colour,
                    "line": {"width": 1.5, "color": colour}},
            hovertext=[hovers[s] for s in chosen["sensor"]], hoverinfo="text",
        ))

    positions = {s: (x, y) for s, x, y in zip(sensors["sensor"], sensors["x"], sensors["y"],
                                               strict=True)}
    stars = [s for s in sorted(seeded) if s in positions]
    if stars:
        figure.add_trace(go.Scatter(
            x=[positions[s][0] for s in stars], y=[positions[s][1] for s in stars],
            mode="markers", name="seed",
            marker={"symbol": "star", "size": 14, "color": "gold",
                    "line": {"width": 1.5, "color": "black"}},
            hovertext=[hovers[s] for s in stars], hoverinfo="text",
        ))
    rings = dict(zip(sensors["sensor"], sensors["regions"].map(len), strict=True))
    for star in stars:
        # the label sits just outside the sensor's outermost ring, on a light background
        outer = _RING_SIZE + _RING_STEP * (rings.get(star, 1) - 1)
        figure.add_annotation(
            x=positions[star][0], y=positions[star][1], yshift=outer / 2 + 9, showarrow=False,
            text=", ".join(plain(r) for r in seeded[star]), font={"size": 11},
            bgcolor="rgba(255,255,255,0.85)")

    for chain in chains or ():
        steps = [str(s) for s in chain if str(s) in positions]
        if len(steps) < 2:
            continue
        figure.add_trace(go.Scatter(
            x=[positions[s][0] for s in steps], y=[positions[s][1] for s in steps],
            mode="lines", name=f"chain to {plain(steps[-1])}",
            line={"color": "#333333", "width": 3},
            hovertext=[f"step {i + 1} of {len(steps)}<br>{hovers[s]}"
                       for i, s in enumerate(steps)],
            hoverinfo="text",
        ))

    gone = sorted({str(s) for s in lost or ()} & positions.keys())
    if gone:
        figure.add_trace(go.Scatter(
            x=[positions[s][0] for s in gone], y=[positions[s][1] for s in gone],
            mode="markers", name="lost",
            marker={"symbol": "x", "size": 14, "color": LOST_COLOUR,
                    "line": {"width": 1, "color": "white"}},
            hovertext=[f"lost in the what-if<br>{hovers[s]}" for s in gone], hoverinfo="text",
        ))

    figure.update_layout(
        height=620, margin={"l": 60, "r": 10, "t": 30, "b": 50}, hovermode="closest",
        legend={"orientation": "v", "x": 1.02, "y": 1, "itemsizing": "constant"},
        # one metre is as long across as it is up (the grid's real shape): the plot area
        # shrinks to fit rather than the axes stretching past the grid
        xaxis={"title": {"text": "x (m)"}, "zeroline": False, "constrain": "domain"},
        yaxis={"title": {"text": "y (m)"}, "scaleanchor": "x", "scaleratio": 1,
               "zeroline": False, "constrain": "domain"},
    )
    return figure


def _pairs(frame: pd.DataFrame | None, columns: tuple[str, str]) -> pd.DataFrame | None:
    """``frame`` if it has ``columns`` and rows, else ``None``."""
    if frame is None or frame.empty or not set(columns) <= set(frame.columns):
        return None
    return frame


def region_table(
    placed: pd.DataFrame,
    sizes: pd.DataFrame | None,
    largest: pd.DataFrame | None,
    seeds: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per region: its seed(s), members on the map, how many of them are triggered, its
    size as the region-sizes view counts it (missing when that view has no row for it) and
    whether it is among the largest regions.

    ``placed`` is :func:`lakeview.sensor_map`'s frame, ``sizes`` and ``largest`` the
    ``region_sizes`` and ``largest_regions`` views (``region``, ``size``), ``seeds`` the
    ``region_seed`` rows (``region``, ``id``); any of these three may be ``None``.

    >>> placed = pd.DataFrame({"sensor": ["a", "b", "c"], "x": [0.0] * 3, "y": [0.0] * 3,
    ...                        "region": ["r1", "r1", "r2"], "triggered": [True, False, True]})
    >>> sizes = pd.DataFrame({"region": ["r1", "r2"], "size": [2, 1]})
    >>> largest = pd.DataFrame({"region": ["r1"], "size": [2]})
    >>> region_table(placed, sizes, largest).values.tolist()
    [['r1', '', 2, 1, 2, True], ['r2', '', 1, 1, 1, False]]
    """
    members = placed[placed["region"].astype(str) != NO_REGION].assign(
        region=lambda f: f["region"].astype(str), sensor=lambda f: f["sensor"].astype(str))
    counted = members.drop_duplicates(["region", "sensor"]).groupby("region").agg(
        members=("sensor", "size"), triggered=("triggered", "sum"))
    sized = _pairs(sizes, ("region", "size"))
    size_of = ({} if sized is None else
               dict(zip(sized["region"].astype(str), sized["size"], strict=True)))
    top = _pairs(largest, ("region", "size"))
    tops = set() if top is None else set(top["region"].astype(str))
    seeded: dict[str, list[str]] = {}
    for sensor, regions in _seeds_by_sensor(seeds).items():
        for region in regions:
            seeded.setdefault(region, []).append(sensor)
    rows = []
    for region in sorted(set(counted.index) | set(size_of) | tops):
        known = region in counted.index
        rows.append((
            region,
            ", ".join(sorted(seeded.get(region, []))),
            int(counted.at[region, "members"]) if known else 0,
            int(counted.at[region, "triggered"]) if known else 0,
            size_of.get(region),
            region in tops,
        ))
    table = pd.DataFrame(rows, columns=REGION_TABLE_COLUMNS)
    return table.astype({"members": "int64", "triggered members": "int64", "size": "Int64",
                         "largest": bool})


def sensor_table(placed: pd.DataFrame, seeds: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per sensor: position in metres, whether it is triggered, its regions and the
    regions it seeds, as text (``(none)`` for no region).

    >>> placed = pd.DataFrame({"sensor": ["a", "a", "b"], "x": [0.0, 0.0, 5.0],
    ...                        "y": [1.0, 1.0, 2.0], "region": ["r2", "r1", NO_REGION],
    ...                        "triggered": [True, True, False]})
    >>> sensor_table(placed, pd.DataFrame({"region": ["r1"], "id": ["a"]})).values.tolist()
    [['a', 0.0, 1.0, True, 'r1, r2', 'r1'], ['b', 5.0, 2.0, False, '(none)', '']]
    """
    sensors = _sensors(placed)
    seeded = _seeds_by_sensor(seeds)
    return pd.DataFrame({
        "sensor": sensors["sensor"],
        "x (m)": sensors["x"],
        "y (m)": sensors["y"],
        "triggered": sensors["triggered"],
        "regions": [", ".join(r) if r else NO_REGION for r in sensors["regions"]],
        "seed of": [", ".join(seeded.get(s, [])) for s in sensors["sensor"]],
    }, columns=SENSOR_TABLE_COLUMNS)
