"""The package's layers hold: a module of ``libs/aspen`` imports only its own layer and the layers
below, modules import no circle, and the entry points (jobs, DAGs, dashboards) import the
package, not each other, and nothing but the CLI imports or runs the CLI.

Imports are read with :mod:`ast`, not by importing: every ``import`` statement counts, at module
level, inside a function, or under ``if TYPE_CHECKING:``. A cycle is one of imports that run, so
the cycle check leaves out the ``TYPE_CHECKING`` ones (they never execute) but keeps the
function-level ones (they only hide a cycle until the function is called).
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBS = ROOT / "libs"

#: The layers of ``libs/aspen``, lowest first. A package may import its own layer and the ones
#: below. (The root package ``aspen`` itself, which holds only the version, is below them all.)
LAYERS: tuple[tuple[str, ...], ...] = (
    ("aspen.errors", "aspen.settings", "aspen.catalog", "aspen.crashpoints", "aspen.state_pickle"),
    ("aspen.provenance",),
    ("aspen.engine",),
    ("aspen.views", "aspen.baselines", "aspen.generators", "aspen.optimizer",
     "aspen.streams"),
    ("aspen.runtime", "aspen.spark"),
    ("aspen.lake",),
    ("aspen.pipeline", "aspen.queries", "aspen.readings", "aspen.sqlprov"),
    ("aspen.quality",),
    ("aspen.bench", "aspen.cli"),
)
LAYER_OF = {"aspen": -1} | {name: level for level, names in enumerate(LAYERS) for name in names}

#: Packages whose private names (``_x``) stay inside their module: what another module needs is
#: public, in one place.
PRIVATE_KEPT = ("aspen.readings", "aspen.quality", "aspen.crashpoints")

#: The folders of entry points; each imports ``aspen`` and its own modules only.
ENTRY_FOLDERS = ("jobs", "dags", "dashboards")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(LIBS).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {
    _module_name(path): path for path in sorted((LIBS / "aspen").rglob("*.py"))
}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(node: ast.AST, guarded: bool = False) -> Iterator[tuple[ast.stmt, bool]]:
    """Every import statement in ``node`` and whether it is under ``if TYPE_CHECKING:``."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node, guarded
    elif isinstance(node, ast.If) and _is_type_checking(node.test):
        for child in node.body:
            yield from _imports(child, True)
        for child in node.orelse:
            yield from _imports(child, guarded)
    else:
        for child in ast.iter_child_nodes(node):
            yield from _imports(child, guarded)


def _targets(module: str, node: ast.stmt) -> list[str]:
    """The modules an import statement of ``module`` names (``from a import b``: ``a.b`` when
    that is a module, else ``a``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    assert isinstance(node, ast.ImportFrom)
    base = node.module or ""
    if node.level:
        package = module.split(".")
        if MODULES.get(module, Path()).name != "__init__.py":
            package = package[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, *([node.module] if node.module else [])])
    found = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in MODULES]
    return found if len(found) == len(node.names) else [base, *found]


def _aspen_imports() -> Iterator[tuple[str, str, int, bool]]:
    """``(importer, imported, line, under TYPE_CHECKING)`` for every import of an Aspen module
    by an Aspen module."""
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, guarded in _imports(tree):
            for target in _targets(module, node):
                if target in MODULES and target != module:
                    yield module, target, node.lineno, guarded


def _package(module: str) -> str:
    """The longest name in :data:`LAYER_OF` that ``module`` is or lies in."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        name = ".".join(parts[:end])
        if name in LAYER_OF:
            return name
    raise AssertionError(f"{module} is in no layer: add its package to LAYERS")


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        _package(module)


def test_no_module_imports_a_higher_layer() -> None:
    upward = []
    for importer, imported, line, _guarded in _aspen_imports():
        source, target = _package(importer), _package(imported)
        if LAYER_OF[target] > LAYER_OF[source]:
            upward.append(f"{importer} (line {line}, layer {LAYER_OF[source]}) imports {imported} "
                          f"(layer {LAYER_OF[target]})")
    assert not upward, "imports of a higher layer:\n" + "\n".join(upward)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a path back to its first module) through each strongly connected set of
    modules that import each other (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)
    cycles = []
    for component in components:  # breadth first: a shortest way back to its first module
        first = min(component)
        paths = {first: [first]}
        queue = deque([first])
        while first not in graph[queue[0]]:
            module = queue.popleft()
            for child in sorted(graph[module] & component):
                if child not in paths:
                    paths[child] = [*paths[module], child]
                    queue.append(child)
        cycles.append([*paths[queue[0]], first])
    return cycles


def test_cycles_are_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle() -> None:
    graph: dict[str, set[str]] = {module: set() for module in MODULES}
    for importer, imported, _line, guarded in _aspen_imports():
        if not guarded:
            graph[importer].add(imported)
    cycles = _cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def _local_names(folder: Path) -> set[str]:
    """The top-level names the files of an entry folder can be imported by."""
    return {p.stem for p in folder.glob("*.py")} | {p.name for p in folder.iterdir()
                                                     if p.is_dir() and any(p.glob("*.py"))}


def test_entry_points_import_the_package_not_each_other() -> None:
    names = {folder: _local_names(ROOT / folder) for folder in ENTRY_FOLDERS}
    crossing = []
    for folder in ENTRY_FOLDERS:
        others = set().union(*(names[f] for f in ENTRY_FOLDERS if f != folder)) - names[folder]
        others |= {"jobs", "dags", "dashboards", "tests", "benchmarks"}
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node, _guarded in _imports(ast.parse(path.read_text(encoding="utf-8"))):
                modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                           else [node.module or ""] if not node.level else [])
                crossing += [f"{path.relative_to(ROOT)} (line {node.lineno}) imports {m}"
                             for m in modules if m.split(".")[0] in others]
    assert not crossing, "entry points importing another folder:\n" + "\n".join(crossing)


def _private_imports_of(module: str, tree: ast.AST) -> Iterator[tuple[str, str, int]]:
    """``(imported module, name, line)`` for every ``from m import _name`` in ``tree`` (the code
    of ``module``) that names another module of ``libs/aspen``."""
    for node, _guarded in _imports(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module in MODULES:
            for alias in node.names:
                if alias.name.startswith("_") and node.module != module:
                    yield node.module, alias.name, node.lineno


def _kept(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in PRIVATE_KEPT)


def _crossing(module: str, tree: ast.AST) -> list[str]:
    return [f"{module} (line {line}) imports {name} from {imported}"
            for imported, name, line in _private_imports_of(module, tree)
            if _kept(module) or _kept(imported)]


def test_private_names_stay_in_their_module() -> None:
    crossing = [line for module, path in MODULES.items()
                for line in _crossing(module, ast.parse(path.read_text(encoding="utf-8")))]
    assert not crossing, "imports of private names:\n" + "\n".join(crossing)


def test_a_private_import_is_found() -> None:
    code = ast.parse("from aspen.readings.modes import KEEP, _hidden\n"
                     "def f():\n    from aspen.lake.apply_local import _append\n")
    assert _crossing("aspen.quality.lineage", code) == [
        "aspen.quality.lineage (line 1) imports _hidden from aspen.readings.modes",
        "aspen.quality.lineage (line 3) imports _append from aspen.lake.apply_local"]
    assert _crossing("aspen.lake.expire_local", code) == [
        "aspen.lake.expire_local (line 1) imports _hidden from aspen.readings.modes"]
    assert not _kept("aspen.readingsx") and _kept("aspen.crashpoints")


def _in_cli(module: str) -> bool:
    return module == "aspen.cli" or module.startswith("aspen.cli.")


def _imports_cli(tree: ast.AST) -> list[int]:
    """The lines of the imports of ``aspen.cli`` (or a module of it) in ``tree``."""
    lines = []
    for node, _guarded in _imports(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if not node.level else [])
        if isinstance(node, ast.ImportFrom) and node.module == "aspen":
            names += [f"aspen.{a.name}" for a in node.names]
        lines += [node.lineno for name in names if _in_cli(name)]
    return lines


def test_cli_imports_are_found() -> None:
    code = ast.parse("import aspen.cli.main\nfrom aspen import cli\n"
                     "from aspen.cli.main import main\ndef f():\n    from aspen.client import x\n")
    assert _imports_cli(code) == [1, 2, 3]


def test_nothing_below_the_cli_imports_it() -> None:
    """Only the CLI's own modules import it: the library and the jobs call the library."""
    found = [f"{module} (line {line})" for module, path in MODULES.items()
             if not _in_cli(module)
             for line in _imports_cli(ast.parse(path.read_text(encoding="utf-8")))]
    found += [f"{path.relative_to(ROOT)} (line {line})"
              for path in sorted((ROOT / "jobs").rglob("*.py"))
              for line in _imports_cli(ast.parse(path.read_text(encoding="utf-8")))]
    assert not found, "imports of aspen.cli outside it:\n" + "\n".join(found)


def test_no_library_module_runs_the_cli() -> None:
    """No module outside the CLI names its entry point (``python -m aspen.cli.main`` in a
    subprocess, say): a process of the library starts a library entry point."""
    found = [module for module, path in MODULES.items()
             if not _in_cli(module)
             and "aspen.cli.main" in path.read_text(encoding="utf-8")]
    found += [str(path.relative_to(ROOT)) for path in sorted((ROOT / "jobs").rglob("*.py"))
              if "aspen.cli.main" in path.read_text(encoding="utf-8")]
    assert not found, "modules naming aspen.cli.main:\n" + "\n".join(found)
