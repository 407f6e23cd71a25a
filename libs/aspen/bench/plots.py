"""PNG plots of a bench run with matplotlib (Agg), when it is installed; skipped otherwise.

>>> names, note = write_plots({}, __import__("pathlib").Path("/nonexistent-never-written"))
>>> names
[]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["write_plots"]


def _ok(rec: Any) -> dict[str, Any] | None:
    return rec["result"] if isinstance(rec, dict) and rec.get("status") == "ok" else None


def _merged(group: Any) -> dict[str, Any] | None:
    """The per-scheme records of a group (``insertions``/``deletions``) as one result."""
    if not isinstance(group, dict):
        return None
    schemes: dict[str, Any] = {}
    for case, rec in group.items():
        res = _ok(rec)
        if res and "/" not in case:  # the first degree only
            schemes.update(res["schemes"])
    return {"schemes": schemes} if schemes else None


def _insertions(plt: Any, res: dict[str, Any], path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for name, data in res["schemes"].items():
        xs = [s["fraction"] for s in data["steps"]]
        axes[0].plot(xs, [s["messages"] for s in data["steps"]], marker="o", label=name)
        axes[1].plot(xs, [s["seconds"] for s in data["steps"]], marker="o", label=name)
    axes[0].set(xlabel="fraction of links inserted", ylabel="messages (cumulative)")
    axes[1].set(xlabel="fraction of links inserted", ylabel="seconds (cumulative)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path)


def _deletions(plt: Any, res: dict[str, Any], path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    names = list(res["schemes"])
    axes[0].bar(names, [res["schemes"][n]["mean_messages"] for n in names])
    axes[0].set(ylabel="messages per deletion", yscale="log")
    axes[1].boxplot([res["schemes"][n]["per_deletion_ms"] for n in names])
    axes[1].set_xticks(range(1, len(names) + 1), names)
    axes[1].set(ylabel="ms per deletion", yscale="log")
    fig.tight_layout()
    fig.savefig(path)


def _order(plt: Any, res: dict[str, Any], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(5, 4))
    names = list(res["orders"])
    ax.bar(names, [res["orders"][n]["bdd_nodes"] for n in names])
    ax.set(ylabel="sum of BDD nodes over reachable tuples", title="variable order")
    fig.tight_layout()
    fig.savefig(path)


def _peers(plt: Any, res: dict[str, Any], path: Path, title: str) -> None:
    fig, ax = plt.subplots(figsize=(6, 4))
    names = [n for n, v in res["peers"].items() if v["mean_update_s"]]
    ax.bar(names, [1000 * res["peers"][n]["mean_update_s"] for n in names])
    ax.set(ylabel="ms per single-link update (mean)", yscale="log", title=title)
    fig.tight_layout()
    fig.savefig(path)


def _ladder(plt: Any, ladder: dict[str, Any], path: Path) -> bool:
    rows = [(int(k), _ok(v)) for k, v in ladder.items()]
    rows = [(n, r) for n, r in rows if r]
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(6, 4))
    for name in rows[0][1]["peers"]:
        pts = [(n, r["peers"][name]["mean_update_s"]) for n, r in rows
               if r["peers"].get(name, {}).get("mean_update_s")]
        ax.plot([p[0] for p in pts], [1000 * p[1] for p in pts], marker="o", label=name)
    ax.set(xscale="log", yscale="log", xlabel="nodes", ylabel="ms per update (mean)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    return True


def write_plots(experiments: dict[str, Any], out: Path) -> tuple[list[str], str]:
    """Write the PNGs into ``out``; (file names, note when skipped or '')."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "PNG plots skipped: matplotlib is not installed in this environment"
    written: list[str] = []
    jobs = [("insertions.png", _insertions, _merged(experiments.get("insertions"))),
            ("deletions.png", _deletions, _merged(experiments.get("deletions"))),
            ("variable_order.png", _order, _ok(experiments.get("order")))]
    for name, draw, res in jobs:
        if res:
            draw(plt, res, out / name)
            written.append(name)
            plt.close("all")
    peers = _ok(experiments.get("peers"))
    if peers:
        _peers(plt, peers, out / "peers.png", f"{peers['nodes']} nodes")
        written.append("peers.png")
        plt.close("all")
    if experiments.get("ladder") and _ladder(plt, experiments["ladder"], out / "ladder.png"):
        written.append("ladder.png")
        plt.close("all")
    return written, ""
