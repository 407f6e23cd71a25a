"""Ask (SQL): one read-only statement over the lake, whose answer rows explain themselves.

The statement is checked before it runs (a refusal is one line); it runs in process (DuckDB,
no Spark) with provenance (:mod:`sqlview`). The answer is a paged table; a row opened below it
shows its formula over base tuples, its minimal witnesses in words (links ``a → b``, sensors
by id) with the chosen one drawn where its links sit on the network and read hop by hop, and
its critical tuples. The question and its answer stay in ``st.session_state``.
"""

from __future__ import annotations

from collections.abc import Hashable

import hops
import sqlwords
import streamlit as st
from lakeview import (
    MAX_DRAWN_EDGES,
    Settings,
    current_lake,
    live_edges,
    read_latest,
    table_version,
    text,
)
from paging import show_paged
from sqlview import (
    EXAMPLES,
    AspenError,
    SqlAnswer,
    ask,
    check,
    read_tables,
    row_frame,
    row_why,
    tuple_parts,
)

#: Keys in ``st.session_state``: the statement typed, the one asked, the remembered answer and
#: the network's map layout.
TEXT_KEY, ASKED_KEY, ANSWER_KEY, POSITIONS_KEY = "sql_text", "sql_asked", "sql_answer", \
    "sql_positions"
#: Rows of the answer a page; witnesses listed for an opened row.
PAGE_SIZE, WITNESS_LIMIT = 50, 20
#: Tables whose versions say the lake moved under a remembered answer.
MOVING = ("ledger", "variables")


def _use(sql: str) -> None:
    """An example button: the statement goes in the box and is asked."""
    st.session_state[TEXT_KEY] = sql
    st.session_state[ASKED_KEY] = sql


def _ask_typed() -> None:
    st.session_state[ASKED_KEY] = st.session_state.get(TEXT_KEY, "")


def answer_of(settings: Settings, sql: str) -> SqlAnswer | str:
    """The answer to ``sql`` or the one-line reason there is none, remembered until the
    statement or a table it reads changes."""
    versions = tuple(table_version(settings, name) for name in (*read_tables(sql), *MOVING))
    key: Hashable = (settings.lake, sql, versions)
    kept = st.session_state.get(ANSWER_KEY)
    if kept is not None and kept[0] == key:
        return kept[1]
    with st.spinner("Running the query and composing each row's formula…"):
        try:
            value: SqlAnswer | str = ask(settings, sql)
        except AspenError as err:
            value = str(err)
    st.session_state[ANSWER_KEY] = (key, value)
    return value


def network(settings: Settings) -> tuple[dict[tuple[str, str], float], list[str]]:
    """The live links' costs by ``(src, dst)`` and every node on them."""
    snapshot = read_latest(settings, "link", ("src", "dst", "cost"))
    if snapshot is None or snapshot.problem or snapshot.rows.empty:
        return {}, []
    live = live_edges(snapshot.rows)
    costs = {(str(s), str(d)): float(c) for s, d, c in
             live[["src", "dst", "cost"]].itertuples(index=False, name=None)}
    return costs, sorted({n for pair in costs for n in pair})


def positions_of(settings: Settings, topomap: object, costs: dict[tuple[str, str], float],
                 nodes: list[str]) -> dict[str, tuple[float, float]]:
    """The network map's layout of every live node, kept until the ``link`` table changes."""
    key = (settings.lake, table_version(settings, "link"))
    kept = st.session_state.get(POSITIONS_KEY)
    if kept is not None and kept[0] == key:
        return kept[1]
    found = topomap.layout(nodes, list(costs))  # type: ignore[attr-defined]
    st.session_state[POSITIONS_KEY] = (key, found)
    return found


def show_row(settings: Settings, answer: SqlAnswer, index: int) -> None:
    """Row ``index``'s provenance: formula, witnesses in words, critical tuples, the chosen
    witness hop by hop and drawn on the network."""
    found = row_why(answer, index, WITNESS_LIMIT)
    costs, nodes = network(settings)

    def parse(name: str) -> sqlwords.Parsed:
        return tuple_parts(name, costs)

    if not found.truncated:  # a cut list would make the formula too long to read
        st.markdown("**Formula** (the row is in the answer exactly when this holds):")
        st.code(found.formula, language=None, wrap_lines=True)
    for note in found.notes:
        st.warning(f"Not exact: {text(note)}")
    count = len(found.witnesses)
    more = f" (the first {count} are shown)" if found.truncated else ""
    st.markdown(f"**{count} minimal witness set{'' if count == 1 else 's'}**{more}: each "
                "alone, present, derives the row.")
    st.dataframe(sqlwords.witness_table(found.witnesses, parse), hide_index=True,
                 width="stretch")
    words = [text(sqlwords.tuple_words(parse(name), name)) for name in found.critical]
    if words:
        st.markdown("**Deleting any one of these removes the row:** " + ", ".join(words))
    elif found.witnesses:
        st.markdown("**No single deletion removes the row:** every tuple has a way around it.")
    if not found.witnesses:
        return
    shown = st.selectbox("Witness to follow", range(1, count + 1), key="sql_witness")
    chosen = sqlwords.witness_links(parse(n) for n in found.witnesses[shown - 1])
    if not chosen:
        st.caption("This witness holds no link: its tuples are listed above.")
        return
    route = sqlwords.chain_of(chosen)
    if route is not None:
        st.dataframe(hops.hop_table(hops.hops_of(route, costs)), hide_index=True,
                     width="stretch")
        ordered = list(zip(route, route[1:], strict=False))
    else:
        ordered = chosen
    others = {link for w in found.witnesses for link in
              sqlwords.witness_links(parse(n) for n in w)} - set(ordered)
    if len(others) + len(ordered) > MAX_DRAWN_EDGES:
        others = set()
        st.caption("The other witnesses' links are too many to draw: only this one is drawn.")
    try:
        import topomap
    except ImportError:
        return
    positions = positions_of(settings, topomap, costs, nodes)
    st.plotly_chart(topomap.route_figure(ordered, costs, positions, sorted(others)),
                    width="stretch", key="sql_map")
    st.caption("Red: the links of the witness chosen above, labelled with their cost; grey: "
               "the other witnesses' links. Only its routers are named.")
    if route is not None and st.button("Show on the network map", key="sql_share"):
        topomap.share_path(f"SQL row {index + 1}: witness {shown}", route)
        st.caption("Shared: the Network page shows this route until another is shared.")


st.title("Ask (SQL)")
st.caption("One read-only `SELECT` over the lake's tables (`link`, `sensor`, `triggered`, "
           "`region_seed`, `readings` and the views). Every answer row carries its provenance: "
           "open a row below the answer to see what it rests on. Runs in process, nothing is "
           "written.")
settings = current_lake()
columns = st.columns(len(EXAMPLES))
for number, (column, example) in enumerate(zip(columns, EXAMPLES, strict=True)):
    column.button(example.title, key=f"sql_example_{number}", on_click=_use,
                  args=(example.sql,), width="stretch", help=f"```sql\n{example.sql}\n```")
if TEXT_KEY not in st.session_state and st.session_state.get(ASKED_KEY):
    st.session_state[TEXT_KEY] = st.session_state[ASKED_KEY]  # back from another page
st.text_area("Query", key=TEXT_KEY, height=130,
             placeholder="SELECT src, dst, cost FROM min_cost WHERE cost > 10")
st.button("Ask", key="sql_ask", type="primary", on_click=_ask_typed)

asked = st.session_state.get(ASKED_KEY)
if not asked:
    st.stop()
problem = check(asked)
if problem is not None:
    st.error(f"The query cannot run: {text(problem)}")
    st.stop()
answer = answer_of(settings, asked)
if isinstance(answer, str):
    st.error(f"The query cannot run: {text(answer)}")
    st.stop()
if answer.notes:
    st.warning("Formulas are not exact for this query: " + "; ".join(map(text, answer.notes)))
frame = row_frame(answer)
shown_rows = show_paged(frame, "sql_page", PAGE_SIZE)
if shown_rows.empty:
    st.stop()
labels = {int(n): ", ".join(f"{c} = {v}" for c, v in zip(frame.columns[1:], values,
                                                           strict=True))
          for n, *values in shown_rows.itertuples(index=False, name=None)}
st.subheader("What a row rests on")
opened = st.selectbox("Open a row", list(labels), format_func=lambda n: f"row {n}: {labels[n]}",
                      key="sql_row")
show_row(settings, answer, int(opened) - 1)
