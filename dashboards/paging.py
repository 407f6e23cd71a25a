"""Paging a table for the dashboard: every row of a frame reachable a page at a time.

:func:`page_of` is pure (which rows a page holds); :func:`show_paged` draws a frame with a page
number input and says which rows of how many are shown, so no table is cut short;
:func:`show_paginated` is its compact form with a pagination bar. Every paged table of the
console pages through here.

>>> import pandas as pd
>>> rows, first, last, pages = page_of(pd.DataFrame({"n": range(7)}), 3, 3)
>>> list(rows["n"]), first, last, pages
([6], 7, 7, 3)
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st
from pandas.io.formats.style import Styler

__all__ = ["PAGE_ROWS", "page_count", "page_of", "show_paginated", "show_paged"]

#: Rows per page of a paged table.
PAGE_ROWS = 500


def page_count(total: int, page_size: int = PAGE_ROWS) -> int:
    """How many pages ``total`` rows fill, ``page_size`` a page (at least one, even when empty).

    >>> page_count(1000, 500), page_count(1001, 500), page_count(0, 500)
    (2, 3, 1)
    """
    if page_size < 1:
        raise ValueError(f"page_size must be at least 1, not {page_size}")
    return max((total + page_size - 1) // page_size, 1)


def page_of(
    frame: pd.DataFrame, page: int, page_size: int = PAGE_ROWS
) -> tuple[pd.DataFrame, int, int, int]:
    """``(rows, first, last, pages)``: the rows of page ``page`` (1-based; clamped to the pages
    there are), the numbers of its first and last row (1-based, both 0 when ``frame`` is
    empty) and the number of pages.

    >>> frame = pd.DataFrame({"n": range(5)})
    >>> rows, first, last, pages = page_of(frame, 2, 2)
    >>> list(rows["n"]), first, last, pages
    ([2, 3], 3, 4, 3)
    >>> page_of(frame, 9, 2)[1:], page_of(frame.iloc[:0], 1, 2)[1:]
    ((5, 5, 3), (0, 0, 1))
    """
    pages = page_count(len(frame), page_size)
    page = min(max(int(page), 1), pages)
    start = (page - 1) * page_size
    rows = frame.iloc[start:start + page_size]
    if rows.empty:
        return rows, 0, 0, pages
    return rows, start + 1, start + len(rows), pages


def show_paged(
    frame: pd.DataFrame,
    key: str,
    page_size: int = PAGE_ROWS,
    style: Callable[[pd.DataFrame], Styler] | None = None,
) -> pd.DataFrame:
    """Show ``frame`` a page at a time and return the rows shown: "Rows X–Y of N", a page
    number input (key ``key``) when there is more than one page, and the page's rows, styled
    by ``style`` when given (e.g. rows highlighted).

    A page number past the last page (the frame shrank under a filter) shows the last page.

    >>> show_paged(pd.DataFrame({"n": range(3)}), "numbers")  # doctest: +SKIP
    """
    pages = page_count(len(frame), page_size)
    page = 1
    if pages > 1:
        # a filter may have shrunk the frame since the page was picked: keep it in range
        if st.session_state.get(key, 1) > pages:
            st.session_state[key] = pages
        page = int(st.number_input(f"Page (of {pages:,})", min_value=1, max_value=pages,
                                   step=1, key=key, width=220))
    rows, first, last, pages = page_of(frame, page, page_size)
    if frame.empty:
        st.caption("No rows.")
    elif pages > 1:
        st.caption(f"Rows {first:,}–{last:,} of {len(frame):,} (page {page:,} of {pages:,}).")
    else:
        st.caption(f"{len(frame):,} row{'' if len(frame) == 1 else 's'}.")
    st.dataframe(rows if style is None else style(rows), hide_index=True, width="stretch")
    return rows


def show_paginated(frame: pd.DataFrame, key: str, one: str, many: str,
                   page_size: int = PAGE_ROWS) -> pd.DataFrame:
    """The compact form of :func:`show_paged`: a pagination bar (key ``key``) under more than
    one page, a caption that names the rows (``one`` and ``many``: "Windows 1–100 of 250 (page
    1 of 3)", "1 window"), and the page's rows; returns them.

    >>> show_paginated(pd.DataFrame({"n": range(3)}), "numbers", "row", "rows")  # doctest: +SKIP
    """
    rows, first, last, pages = page_of(frame, 1, page_size)
    if pages > 1:
        page = st.pagination(pages, key=key)
        rows, first, last, pages = page_of(frame, int(page), page_size)
        st.caption(f"{many.capitalize()} {first:,}–{last:,} of {len(frame):,} "
                   f"(page {page} of {pages}).")
    else:
        st.caption(f"{len(frame):,} {one if len(frame) == 1 else many}.")
    st.dataframe(rows, hide_index=True, width="stretch")
    return rows
