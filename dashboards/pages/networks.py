"""Stream networks: what a network computes, its outputs, and the readings behind each one.

Pick a network (``stream_networks``); the page says in words what it computes (its input
streams and operators in order) and its provenance mode, shows its definition, lists its outputs
newest first (filtered by group), charts and lists the readings behind a chosen output per input
stream, and lists the readings the network dropped. The network and the group are query
parameters too, so another page can link here (``networks?network=hot_pairs&group=s7``).

Reads ``stream_networks``, ``network_outputs``, ``network_drops`` and ``readings`` through
``networkview`` (delta-rs, cached by version); a lake without networks gives a plain message,
never a traceback, and an output whose readings are past retention says so.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from lakeview import (
    READINGS,
    UNREADABLE,
    ProvenanceExpiredError,
    Settings,
    _error_text,
    current_lake,
    table_version,
    text,
)
from networkview import (
    PAGE_ROWS,
    NetworkChoice,
    drop_table,
    explanation,
    group_choices,
    group_label,
    network_choices,
    network_drops,
    network_outputs,
    network_words,
    output_figure,
    output_table,
    output_words,
    reading_table,
    reason_counts,
)
from outputnames import output_choice, output_name
from paging import show_paged
from pickers import pick_from_address

#: The group filter's choice of every group.
ALL_GROUPS = "(all groups)"


def pick_network(choices: list[NetworkChoice]) -> NetworkChoice:
    """The network to show: the one in the ``network`` query parameter, else the first."""
    names = [c.name for c in choices]
    name = pick_from_address(
        "Network", names, param="network", key="network",
        unknown=lambda wanted: f"No network {text(wanted)} has run on this lake; showing "
                               f"{text(names[0])}.",
        format_func=lambda n: f"{n} ({choices[names.index(n)].mode})")
    return choices[names.index(name)]


def pick_group(outputs: pd.DataFrame, choice: NetworkChoice) -> str | None:
    """The group (sensor) whose outputs to list, None for all; the ``group`` query parameter
    picks one. A network that runs as one group has nothing to filter."""
    groups = group_choices(outputs)
    if groups == [""]:
        st.caption("The network runs as one group over every reading: each output's readings "
                   "may come from several sensors.")
        return None
    options = [ALL_GROUPS, *groups]
    wanted = st.query_params.get("group")
    if wanted is not None and wanted not in groups:
        st.warning(f"Network {text(choice.name)} has no output in group {text(wanted)}; "
                   "showing every group.")
    group = st.selectbox("Group (sensor)", options,
                         index=options.index(wanted) if wanted in groups else 0,
                         key=f"group-{choice.name}", format_func=group_label)
    if group == ALL_GROUPS:
        st.query_params.pop("group", None)
        return None
    st.query_params["group"] = group
    return group


def show_output(settings: Settings, choice: NetworkChoice, shown: pd.DataFrame,
                key: str) -> None:
    """The readings behind one output of the page shown: in words, charted and listed."""
    st.subheader("The readings behind an output")
    labels = {row["output"]: output_choice(row["output"], row["ts"])
              for row in shown.to_dict("records")}
    groups = dict(zip(shown["output"], shown["grp"], strict=True))
    output = st.selectbox("Output (of the page shown, newest first)", list(labels),
                          format_func=labels.__getitem__, key=key)
    if choice.mode == "none":
        st.info(f"Network {text(choice.name)} ran with `--provenance none`: its outputs keep "
                "no provenance, so their readings cannot be shown.")
        return
    try:
        explained = explanation(settings, choice.name, output)
    except ProvenanceExpiredError:
        st.warning("The readings behind this output are past the readings' retention: "
                   "housekeeping deleted them, so they cannot be shown. Its attributes are "
                   "still in the table above.")
        return
    except UNREADABLE as err:
        st.warning(f"The readings behind this output cannot be shown: "
                   f"{_error_text(settings, err)}")
        return
    # the output named in words, not by its stored key
    st.markdown(output_words(explained, groups.get(output, "")).replace(
        f"Output {text(explained.output)}", f"Output {text(output_name(explained.output))}", 1))
    st.plotly_chart(output_figure(explained), width="stretch")
    how = ("decoded from the ids the output keeps" if explained.mode == "eager"
           else "rebuilt by replaying the group's readings of the output's id intervals")
    st.caption(f"One kind of marker per input stream; the output's window is shaded when it "
               f"has one. Its readings are {how}. Values are the readings as the sensors sent "
               "them (the lake records no unit); times are UTC. Hover for ids, sensors, times "
               "and values.")
    show_paged(reading_table(explained), f"readings-{key}", page_size=PAGE_ROWS)


def show_outputs(settings: Settings, choice: NetworkChoice, outputs: pd.DataFrame) -> None:
    """The network's outputs, newest first, a page at a time, filtered by group; then the
    readings behind the one picked."""
    st.header("Outputs")
    group = pick_group(outputs, choice)
    chosen = outputs if group is None else outputs[outputs["grp"] == group]
    st.caption(f"{len(chosen):,} output(s){'' if group is None else ' in this group'}, newest "
               "first (by event time); each row's attributes are the output's own.")
    key = f"outputs-{choice.name}-{group_label(group) if group is not None else ''}"
    rows = show_paged(output_table(chosen), key, page_size=PAGE_ROWS)
    if rows.empty:
        return
    show_output(settings, choice, chosen.loc[rows.index],
                f"output-{key}-{int(rows.index[0])}")


def show_drops(drops: pd.DataFrame, choice: NetworkChoice) -> None:
    """The readings the network did not use, with the reason."""
    st.header("Dropped readings")
    if drops.empty:
        st.caption("The network dropped no reading (none came too late).")
        return
    st.markdown(f"{len(drops):,} reading(s) dropped. By reason: " + ", ".join(
        f"{text(reason)} {count:,}" for reason, count in reason_counts(drops)))
    show_paged(drop_table(drops), f"drops-{choice.name}", page_size=PAGE_ROWS)


def show_networks(settings: Settings) -> None:
    """The page: empty states, the network picker, its words, outputs and drops."""
    try:
        choices = network_choices(settings)
        has_readings = table_version(settings, READINGS) is not None
    except UNREADABLE as err:
        st.warning(f"Cannot read `stream_networks`: {_error_text(settings, err)}")
        return
    if not choices:
        run = ("run one with `aspen stream --network FILE` (add `--local` to run it in "
               "process, without Spark)")
        if has_readings:
            st.info(f"No stream network has run on this lake yet: {run}.")
        else:
            st.info("No stream network has run on this lake yet, and it has no readings: "
                    f"ingest some (`aspen ingest`), then {run}.")
        return
    choice = pick_network(choices)
    st.markdown(network_words(choice))
    with st.expander("Definition"):
        st.code(choice.pretty(), language="json")
    try:
        outputs = network_outputs(settings, choice.name)
        drops = network_drops(settings, choice.name)
    except UNREADABLE as err:
        st.warning(f"Cannot read the network's outputs: {_error_text(settings, err)}")
        return
    if outputs.empty:
        st.info(f"Network {text(choice.name)} has emitted no final output yet: run "
                "`aspen stream --network FILE` again once its readings close a window.")
    else:
        show_outputs(settings, choice, outputs)
    show_drops(drops, choice)


st.title("Stream networks")
show_networks(current_lake())
