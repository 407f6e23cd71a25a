"""Provenance of SQL by meaning: for random small base tables and random subsets S of their
tuples, a row of the answer is in the answer recomputed by DuckDB over S iff its formula is
true when exactly the tuples of S are (views in the query recomputed over S from scratch)."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.baselines.scratch import evaluate
from aspen.engine.batch import BaseFact, Batch
from aspen.runtime.local import LocalRuntime
from aspen.sqlprov.run import run_frames

NODES = ("a", "b", "c", "d")
SENSORS = ("s1", "s2", "s3", "s4")

#: (name, SQL, the output columns a row is compared on (None: all), monotone)
CORPUS = [
    ("join", "SELECT x.src, y.dst FROM link x JOIN link y ON x.dst = y.src", None, True),
    ("filter", "SELECT src, dst FROM link WHERE cost > 1", None, True),
    ("projection", "SELECT src FROM link", None, True),
    ("distinct", "SELECT DISTINCT l.dst FROM link l, sensor s WHERE l.src = s.id", None, True),
    ("union", "SELECT src AS n FROM link UNION SELECT id FROM sensor", None, True),
    ("union_all", "SELECT dst AS n FROM link UNION ALL SELECT id FROM triggered", None, True),
    ("except", "SELECT src FROM link EXCEPT SELECT id FROM triggered", None, False),
    ("intersect", "SELECT src FROM link INTERSECT SELECT id FROM sensor", None, True),
    ("exists", "SELECT l.src, l.dst FROM link l WHERE EXISTS "
               "(SELECT 1 FROM link m WHERE m.src = l.dst)", None, True),
    ("not_exists", "SELECT l.src FROM link l WHERE NOT EXISTS "
                   "(SELECT 1 FROM triggered t WHERE t.id = l.dst)", None, False),
    ("in", "SELECT s.id FROM sensor s WHERE s.id IN (SELECT src FROM link)", None, True),
    ("count_having", "SELECT src, COUNT(*) AS n FROM link GROUP BY src HAVING COUNT(*) >= 2",
     (0,), True),
    ("count_having_join", "SELECT x.src, COUNT(*) AS n FROM link x JOIN link y "
                          "ON x.dst = y.src GROUP BY x.src HAVING COUNT(*) > 1", (0,), True),
    ("count_over_negation", "SELECT l.src, COUNT(*) AS n FROM link l WHERE NOT EXISTS "
                            "(SELECT 1 FROM triggered t WHERE t.id = l.dst) GROUP BY l.src "
                            "HAVING COUNT(*) >= 2", (0,), False),
    ("group", "SELECT dst, MAX(cost) AS c FROM link GROUP BY dst", (0,), True),
    ("left_join", "SELECT l.src, t.id FROM link l LEFT JOIN triggered t ON t.id = l.dst",
     None, False),
    ("derived", "SELECT q.n FROM (SELECT DISTINCT dst AS n FROM link) q JOIN triggered t "
                "ON t.id = q.n", None, True),
    ("global_count", "SELECT COUNT(*) AS n FROM link HAVING COUNT(*) >= 3", (), True),
]

VIEW_CORPUS = [
    ("view_join", "SELECT r.src, l.dst FROM reachable r JOIN link l ON r.dst = l.src", None, True),
    ("view_not_exists", "SELECT r.src, r.dst FROM reachable r WHERE NOT EXISTS "
                        "(SELECT 1 FROM link l WHERE l.src = r.src AND l.dst = r.dst)",
     None, False),
    ("view_count", "SELECT r.src, COUNT(*) AS n FROM reachable r GROUP BY r.src "
                   "HAVING COUNT(*) >= 2", (0,), True),
]


@st.composite
def lakes(draw):
    pairs = [(s, d) for s in NODES for d in NODES]
    links = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=7))
    costs = draw(st.lists(st.sampled_from([1.0, 2.0]), min_size=len(links),
                          max_size=len(links)))
    sensors = draw(st.lists(st.sampled_from(NODES + SENSORS), unique=True, max_size=4))
    triggered = draw(st.lists(st.sampled_from(NODES + SENSORS), unique=True, max_size=3))
    tuples = {f"link:{s}:{d}": ("link", (s, d, c)) for (s, d), c in zip(links, costs, strict=True)}
    tuples.update({f"sensor:{i}": ("sensor", (i, 0.0, 0.0)) for i in sensors})
    tuples.update({f"triggered:{i}": ("triggered", (i,)) for i in triggered})
    return tuples


def frames(tuples, keep=None):
    rows = {"link": [], "sensor": [], "triggered": []}
    for name, (relation, values) in tuples.items():
        if keep is None or name in keep:
            rows[relation].append(values)
    return {"link": pd.DataFrame(rows["link"], columns=["src", "dst", "cost"]),
            "sensor": pd.DataFrame(rows["sensor"], columns=["id", "x", "y"]),
            "triggered": pd.DataFrame(rows["triggered"], columns=["id"])}


def reachable_frame(tuples, keep=None):
    """``reachable`` over the kept links: with formulas maintained by the engine (all kept),
    or recomputed from scratch without formulas (a subset)."""
    links = [(n, v) for n, (r, v) in tuples.items() if r == "link" and (keep is None or n in keep)]
    if keep is not None:
        found = evaluate("reachable", [BaseFact("link", v, n) for n, v in links])
        return pd.DataFrame(sorted(found), columns=["src", "dst"]).assign(provenance=None), {}
    rt = LocalRuntime(views=("reachable",), partitions=2)
    names = {f"v{i}": n for i, (n, _) in enumerate(links)}
    rt.apply(Batch(inserts=tuple(BaseFact("link", v, f"v{i}") for i, (_, v) in enumerate(links))))
    rt.flush()
    view = dict(rt.view("reachable"))
    rows = [(s, d, rt.manager.encode(f)) for (s, d), f in sorted(view.items())]
    return pd.DataFrame(rows, columns=["src", "dst", "provenance"]), names


def key(row, columns):
    return tuple(row) if columns is None else tuple(row[i] for i in columns)


def check_meaning(tuples, sql, columns, monotone, subsets, with_view=False):
    full = frames(tuples)
    names = {}
    if with_view:
        full["reachable"], names = reachable_frame(tuples)
    answer = run_frames(full, sql, names=names)
    assert answer.exact
    m = answer.manager
    present = {key(r, columns) for r in answer.rows}
    for keep in subsets:
        sub = frames(tuples, keep)
        if with_view:
            sub["reachable"], _ = reachable_frame(tuples, keep)
        again = {key(r, columns) for r in run_frames(sub, sql, provenance=False).rows}
        for row, f in zip(answer.rows, answer.formulas, strict=True):
            assert (key(row, columns) in again) == m.evaluate(f, set(keep)), (sql, row, keep)
        if monotone:
            assert again <= present, (sql, keep)


def subsets_of(tuples, chosen):
    names = sorted(tuples)
    out = [set(names), set()]
    out += [{n for n, bit in zip(names, bits, strict=False) if bit} for bits in chosen]
    return out


@pytest.mark.parametrize(("name", "sql", "columns", "monotone"), CORPUS,
                         ids=[c[0] for c in CORPUS])
@settings(max_examples=8, deadline=None)
@given(tuples=lakes(), chosen=st.lists(st.lists(st.booleans(), min_size=14, max_size=14),
                                       max_size=3))
def test_formula_true_iff_row_in_answer_over_subset(name, sql, columns, monotone, tuples, chosen):
    check_meaning(tuples, sql, columns, monotone, subsets_of(tuples, chosen))


@pytest.mark.parametrize(("name", "sql", "columns", "monotone"), VIEW_CORPUS,
                         ids=[c[0] for c in VIEW_CORPUS])
@settings(max_examples=6, deadline=None)
@given(tuples=lakes(), chosen=st.lists(st.lists(st.booleans(), min_size=14, max_size=14),
                                       max_size=3))
def test_view_rows_contribute_their_stored_formulas(name, sql, columns, monotone, tuples,
                                                    chosen):
    check_meaning(tuples, sql, columns, monotone, subsets_of(tuples, chosen), with_view=True)


def test_every_subset_of_a_small_lake():
    """Exhaustively, on one lake, the queries with a negation or a threshold."""
    tuples = {"link:a:b": ("link", ("a", "b", 1.0)), "link:a:c": ("link", ("a", "c", 1.0)),
              "link:b:c": ("link", ("b", "c", 2.0)), "triggered:c": ("triggered", ("c",)),
              "triggered:b": ("triggered", ("b",))}
    names = sorted(tuples)
    subsets = [set(c) for r in range(len(names) + 1) for c in itertools.combinations(names, r)]
    chosen = {"except", "not_exists", "count_having", "count_over_negation", "left_join"}
    for name, sql, columns, monotone in CORPUS:
        if name in chosen:
            check_meaning(tuples, sql, columns, monotone, subsets)
