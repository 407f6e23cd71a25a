"""The console's layers (docs/architecture.md): pages and picture modules reach the ``aspen``
package only through the reader layer, picture modules never read the lake, and every page is in
the page registry."""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

DASHBOARDS = Path(__file__).resolve().parents[2] / "dashboards"
sys.path.insert(0, str(DASHBOARDS))
import page_registry  # noqa: E402

#: The reader layer: the only modules of the console that import ``aspen`` or ``deltalake``.
READERS = frozenset({"healthview", "lakeview", "lakewatch", "networkview", "queryview",
                     "readingview", "sqlview"})
#: Modules that read nothing and draw nothing of their own: the app and the page list.
SHELL = frozenset({"app", "page_registry"})
#: Packages that read Delta tables: a page or a picture reaches them through the reader layer.
LAKE_PACKAGES = frozenset({"aspen", "deltalake"})
#: The first parameter of a reader function that reads a table.
LAKE_PARAMETERS = frozenset({"settings", "lake", "uri"})


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(DASHBOARDS).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


PAGES = sorted((DASHBOARDS / "pages").glob("*.py"))
PICTURES = sorted(p for p in DASHBOARDS.rglob("*.py")
                  if "pages" not in p.relative_to(DASHBOARDS).parts
                  and _module_of(p) not in READERS | SHELL)


def imports(source: str) -> Iterator[tuple[str, tuple[str, ...], int]]:
    """``(module, names, line)`` of every import in ``source``, those inside functions too
    (``names`` is empty for ``import m``; a relative import's module starts with dots).

    >>> list(imports("import aspen.errors\\ndef f():\\n    from lakeview import text"))
    [('aspen.errors', (), 1), ('lakeview', ('text',), 3)]
    """
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, (), node.lineno
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            yield module, tuple(a.name for a in node.names), node.lineno


def lake_imports(source: str) -> list[str]:
    """The imports of ``source`` that reach a lake package (:data:`LAKE_PACKAGES`) directly.

    >>> lake_imports("from aspen.settings import Settings\\nimport deltalake\\nimport pandas")
    ['line 1: aspen.settings', 'line 2: deltalake']
    >>> lake_imports("from lakeview import Settings")
    []
    """
    return [f"line {line}: {module}" for module, _names, line in imports(source)
            if module.split(".")[0] in LAKE_PACKAGES]


def _reads_the_lake(value: object) -> bool:
    """Whether a reader-layer name reads the lake: a function whose first parameter is the
    lake (its ``settings``, its root ``lake`` or a table's ``uri``)."""
    if not callable(value) or inspect.isclass(value):
        return False
    try:
        parameters = list(inspect.signature(value).parameters)
    except (TypeError, ValueError):
        return False
    return bool(parameters) and parameters[0] in LAKE_PARAMETERS


def test_the_lake_reading_names_of_the_reader_layer_are_recognised() -> None:
    lakeview = importlib.import_module("lakeview")
    assert all(_reads_the_lake(getattr(lakeview, n)) for n in (
        "read_latest", "table_version", "load_table", "load_view", "load_provenance"))
    assert not any(_reads_the_lake(getattr(lakeview, n)) for n in (
        "text", "plain", "live_edges", "REGISTRY", "Settings", "NO_REGION"))


def test_the_checker_sees_every_kind_of_import() -> None:
    source = ("import aspen\nfrom aspen.errors import AspenError\n"
              "def f():\n    import deltalake.exceptions\n"
              "from lakeview import text\nfrom .words import plural\n")
    assert lake_imports(source) == ["line 1: aspen", "line 2: aspen.errors",
                                    "line 4: deltalake.exceptions"]
    assert ("..words", ("plural",), 1) in imports("from ..words import plural")


@pytest.mark.parametrize("path", PAGES + PICTURES,
                         ids=[str(p.relative_to(DASHBOARDS)) for p in PAGES + PICTURES])
def test_pages_and_pictures_reach_the_package_only_through_the_reader_layer(path: Path) -> None:
    found = lake_imports(path.read_text(encoding="utf-8"))
    assert not found, (f"{path.relative_to(DASHBOARDS)} imports the lake's packages directly "
                       f"(import them in a reader module and re-export): {found}")


@pytest.mark.parametrize("path", PICTURES,
                         ids=[str(p.relative_to(DASHBOARDS)) for p in PICTURES])
def test_picture_modules_read_no_table(path: Path) -> None:
    reading = []
    for module, names, line in imports(path.read_text(encoding="utf-8")):
        if module not in READERS:
            continue
        if not names or module == "lakewatch":  # the module itself, or the lake's versions
            reading.append(f"line {line}: {module}")
            continue
        reader = importlib.import_module(module)
        reading += [f"line {line}: {module}.{name}" for name in names
                    if _reads_the_lake(getattr(reader, name, None))]
    assert not reading, (f"{path.relative_to(DASHBOARDS)} reads the lake (a page reads and "
                         f"passes the rows in): {reading}")


def test_the_reader_layer_is_where_the_package_comes_in() -> None:
    """The layer is not empty words: each reader module imports the package itself."""
    for name in sorted(READERS):
        source = (DASHBOARDS / f"{name}.py").read_text(encoding="utf-8")
        assert lake_imports(source), f"{name} reads nothing from the package"


def test_the_pictures_are_what_the_architecture_lists() -> None:
    names = {_module_of(p).split(".")[0] for p in PICTURES}
    assert {"status", "topomap", "regionmap", "whatif", "paging", "pickers"} <= names
    assert not names & READERS


# -- the page registry --------------------------------------------------------------------------


def test_every_page_file_is_registered_and_every_entry_has_a_file() -> None:
    files = {p.stem for p in PAGES}
    registered = [page.module for page in page_registry.PAGES]
    assert sorted(registered) == sorted(files), (
        f"unregistered pages: {sorted(files - set(registered))}; "
        f"entries without a file: {sorted(set(registered) - files)}")
    for page in page_registry.PAGES:
        assert (DASHBOARDS / page_registry.page_file(page)).is_file()


def test_the_registry_is_in_order_with_unique_titles() -> None:
    pages = page_registry.PAGES
    orders = [page.order for page in pages]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)
    assert len({page.title for page in pages}) == len(pages)
    assert page_registry.default_page().module == "overview"


def test_page_links_name_registered_pages() -> None:
    """``st.page_link("pages/x.py")`` in a page must name a page the navigation has."""
    known = {page_registry.page_file(page) for page in page_registry.PAGES}
    named = []
    for path in PAGES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        named += [(path.name, node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and node.value.startswith("pages/") and node.value.endswith(".py")]
    assert named, "no page links to another"
    assert [n for n in named if n[1] not in known] == []


def test_the_doctests_of_the_checker_pass() -> None:
    import doctest

    failed, tried = doctest.testmod(sys.modules[__name__])
    assert tried > 0 and failed == 0
