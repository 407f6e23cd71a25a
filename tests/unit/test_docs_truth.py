"""The docs against what the code knows: commands and options, DAGs and tasks, dashboard pages,
lake tables, and README's length.

Everything here parses files or imports light modules (no Spark, no Airflow, no lake), so a
stale sentence fails in a second with a message that says which page to update.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import re
from functools import cache
from pathlib import Path

import pytest

from aspen.cli.main import build_parser

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
ARCHITECTURE = REPO / "docs" / "architecture.md"
CLI_DOC = REPO / "docs" / "cli.md"
DASHBOARD_DOC = REPO / "docs" / "operating-the-dashboard.md"
README_MAX_LINES = 250

_CODE_SPAN = re.compile(r"`([^`]+)`")
_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
_ROW_CELLS = re.compile(r"(?<!\\)\|")


# --- reading the docs ---


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def section(text: str, title: str) -> str:
    """The body of the ``##`` section whose heading is ``title`` (up to the next ``##``).

    >>> section("# A\\n## B\\nb text\\n## C\\nc", "B")
    'b text'
    """
    match = re.search(rf"^## {re.escape(title)}[ \t]*\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"no section '## {title}': restore it or update tests/unit/test_docs_truth.py"
    return match.group(1).strip()


def table_rows(text: str) -> list[list[str]]:
    """The cells of every Markdown table row in ``text`` (header and rule rows left out).

    >>> table_rows("| a | b |\\n|---|---|\\n| `x` | y \\\\| z |")
    [['`x`', 'y \\\\| z']]
    """
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("|") or set(line) <= set("|-: "):
            continue
        rows.append([cell.strip() for cell in _ROW_CELLS.split(line)[1:-1]])
    return rows[1:] if rows and not any("`" in cell for cell in rows[0]) else rows


def spans(text: str) -> list[str]:
    """The code spans of ``text``."""
    return _CODE_SPAN.findall(text)


def options(text: str) -> set[str]:
    """The long options ``text`` names (``--word``).

    >>> sorted(options("run `aspen maintain --follow` with --poll S; not x--y"))
    ['--follow', '--poll']
    """
    return set(_OPTION.findall(text))


# --- what the code knows ---


@cache
def commands() -> dict[tuple[str, ...], set[str]]:
    """Every command path of the ``aspen`` parser (``()`` is ``aspen`` itself, ``("query",
    "run")`` is ``aspen query run``) with its long options (hidden ones and ``--help`` left out).
    """
    found: dict[tuple[str, ...], set[str]] = {}

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        found[path] = {
            name for action in parser._actions if action.help is not argparse.SUPPRESS
            for name in action.option_strings if name.startswith("--") and name != "--help"
        }
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, (*path, name))

    walk(build_parser(), ())
    return found


def command_path(words: list[str]) -> tuple[str, ...]:
    """The longest command path that ``words`` (what follows ``aspen``) starts with, skipping
    options and their values.

    >>> command_path(["--lake", "x", "query", "run", "hot", "--replan"])
    ('query', 'run')
    """
    path: tuple[str, ...] = ()
    for word in words:
        if (*path, word) in commands():
            path = (*path, word)
        elif not word.startswith("-") and path:
            break
    return path


def allowed_options(path: tuple[str, ...]) -> set[str]:
    """The options a mention of ``aspen <path> …`` may name: its own, its ancestors' (the
    global ``--lake``) and, for a command with sub-commands, theirs."""
    allowed = {"--help"}
    for other, names in commands().items():
        if other == path[: len(other)] or other[: len(path)] == path:
            allowed |= names
    return allowed


def _decorator_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return f"{_decorator_name(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def _task_id(function: ast.FunctionDef) -> str | None:
    for decorator in function.decorator_list:
        name = _decorator_name(decorator)
        if name == "task" or name.startswith("task."):
            if isinstance(decorator, ast.Call):
                for keyword in decorator.keywords:
                    if keyword.arg == "task_id" and isinstance(keyword.value, ast.Constant):
                        return str(keyword.value.value)
            return function.name
    return None


@cache
def dags() -> dict[str, frozenset[str]]:
    """Every DAG of ``dags/`` with its task ids, from the files' syntax (no Airflow import)."""
    found: dict[str, frozenset[str]] = {}
    for path in sorted((REPO / "dags").glob("*.py")):
        tree = ast.parse(_text(path))
        dag_id = next((ast.literal_eval(node.value) for node in tree.body
                       if isinstance(node, ast.Assign) and any(
                           isinstance(t, ast.Name) and t.id == "DAG_ID" for t in node.targets)),
                      None)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and any(
                    _decorator_name(d) == "dag" for d in node.decorator_list):
                tasks = {task for inner in ast.walk(node) if isinstance(inner, ast.FunctionDef)
                         for task in [_task_id(inner)] if task}
                found[dag_id or node.name] = frozenset(tasks)
    return found


@cache
def pages() -> tuple[str, ...]:
    """The titles of the console's pages (``dashboards/page_registry.py``, imported by path)."""
    spec = importlib.util.spec_from_file_location(
        "_docs_truth_page_registry", REPO / "dashboards" / "page_registry.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return tuple(page.title for page in module.PAGES)


#: Modules whose constants name lake tables, and the constants: a name, a tuple of names, a dict
#: keyed by name, or (``.values``) a dict whose values are names.
_TABLE_CONSTANTS: dict[str, tuple[str, ...]] = {
    "aspen.catalog": ("VIEWS",),
    "aspen.lake.tables": ("TABLE_DDL", "BASE_TABLES"),
    "aspen.lake.view_log": ("VIEW_CHANGES",),
    "aspen.lake.lease": ("LEASE_TABLE", "LOG_LEASE_TABLE"),
    "aspen.lake.housekeeping": ("LEASE_TABLES", "LOG_TABLES", "STREAM_TABLES"),
    "aspen.lake.summary": ("SUMMARY_TABLE",),
    "aspen.pipeline.ledger": ("LEDGER",),
    "aspen.pipeline.batch": ("METRICS",),
    "aspen.pipeline.integrity": ("STATE_TABLES.values",),
    "aspen.quality.results": ("RESULTS_TABLE",),
    "aspen.queries.registry": ("QUERIES_TABLE",),
    "aspen.queries.plans": ("PLANS_TABLE",),
    "aspen.queries.runs": ("RUNS_TABLE",),
    "aspen.queries.status": ("STATUS_TABLE",),
    "aspen.queries.optimizer_state": ("STATE_TABLE",),
    "aspen.readings.rule_tables": ("READING_WINDOWS", "READING_DROPS", "READING_RULES"),
    "aspen.readings.network_tables": ("NETWORK_OUTPUTS", "NETWORK_DROPS", "STREAM_NETWORKS"),
}


def _names(module: object, constant: str) -> set[str]:
    name, _, part = constant.partition(".")
    value = getattr(module, name)
    if isinstance(value, str):
        return {value}
    if part == "values":
        return {str(v) for v in value.values()}
    return {str(v) for v in value}  # a tuple's items, a dict's keys


def _declared_table_constants() -> dict[str, str]:
    """Every module-level ``*_TABLE = "name"`` in the package (by syntax), so a table named by a
    new constant is found without a change here."""
    found = {}
    for path in (REPO / "libs" / "aspen").rglob("*.py"):
        for node in ast.parse(_text(path)).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                for target in node.targets:
                    if (isinstance(target, ast.Name) and target.id.endswith("_TABLE")
                            and isinstance(node.value.value, str)):
                        found[f"{path.relative_to(REPO)}:{target.id}"] = node.value.value
    return found


@cache
def lake_tables() -> frozenset[str]:
    """Every table name the code defines, with ``q_<name>`` and ``qstate_<name>`` for the
    queries' result and incremental state tables."""
    names: set[str] = set()
    for module_name, constants in _TABLE_CONSTANTS.items():
        module = importlib.import_module(module_name)
        for constant in constants:
            names |= _names(module, constant)
    names |= set(_declared_table_constants().values())
    names |= set(importlib.import_module("aspen.lake.housekeeping").known_tables())
    names.add(importlib.import_module("aspen.queries.names").RESULT_PREFIX + "<name>")
    names.add(importlib.import_module("aspen.queries.incremental.store").STATE_PREFIX + "<name>")
    return frozenset(names)


# --- README ---


def test_readme_has_at_most_250_lines() -> None:
    lines = len(_text(README).splitlines())
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines, more than {README_MAX_LINES}: move detail into a docs/ "
        "page and link it")


def test_readme_names_every_command_and_links_the_cli_page() -> None:
    cli = section(_text(README), "The CLI")
    missing = [path[0] for path in commands() if len(path) == 1
               and not re.search(rf"`aspen {re.escape(path[0])}\b", cli)]
    assert not missing, (f"README.md's 'The CLI' table names no `aspen {missing[0]} …`: add a "
                         f"row for each of {missing}")
    assert "(docs/cli.md)" in cli, "README.md's 'The CLI' must link docs/cli.md"


def _cli_doc_sections() -> dict[tuple[str, ...], str]:
    """docs/cli.md's sections by the command path their heading names."""
    found: dict[tuple[str, ...], str] = {}
    parts = re.split(r"^(#{2,4} .*)$", _text(CLI_DOC), flags=re.M)
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        match = re.fullmatch(r"#{2,4} `aspen ([a-z -]+)`", heading.strip())
        assert match, f"docs/cli.md: heading {heading!r} names no command as `aspen …`"
        found[tuple(match.group(1).split())] = body
    return found


def test_cli_page_documents_every_command_and_option() -> None:
    """Each command has a section in docs/cli.md, and each of its options is named in it, in
    a section of a command above it (options several commands share), or in its README row."""
    doc = _cli_doc_sections()
    readme_cli = section(_text(README), "The CLI")
    problems = []
    for path, names in commands().items():
        if not path:
            continue
        if path not in doc:
            problems.append(f"add a section '## `aspen {' '.join(path)}`' to docs/cli.md")
            continue
        text = "".join(body for other, body in doc.items() if path[: len(other)] == other)
        text += "".join(line for line in readme_cli.splitlines()
                        if line.startswith(f"| `aspen {path[0]}"))
        for name in sorted(names - options(text)):
            problems.append(f"docs/cli.md: say what `aspen {' '.join(path)} {name}` does")
    stale = [path for path in doc if path not in commands()]
    problems += [f"docs/cli.md: `aspen {' '.join(p)}` is no command; drop or rename its section"
                 for p in stale]
    assert not problems, "\n".join(problems)


def _aspen_mentions(text: str) -> list[tuple[tuple[str, ...], str]]:
    """Each ``aspen …`` command written in a code span or a code-block line, as (the command
    path it names, the text it names options in)."""
    found = []
    pieces = spans(text) + [line for line in text.splitlines() if "aspen " in line]
    for piece in pieces:
        for match in re.finditer(r"(?:^|[\s/$])aspen ((?:(?!\baspen ).)*)", piece):
            words = match.group(1).split()
            if words and (words[0].startswith("-") or command_path(words)):
                found.append((command_path(words), match.group(1)))
    return found


@pytest.mark.parametrize("doc", [README, CLI_DOC], ids=lambda p: p.name)
def test_options_named_for_a_command_exist(doc: Path) -> None:
    """Every ``--option`` written after ``aspen COMMAND`` (in README.md's CLI table: anywhere in
    the command's row) is an option of that command, and a row's ``aspen CMD a|b`` names
    sub-commands that exist."""
    text = _text(doc)
    mentions = _aspen_mentions(text)
    wrong = set()
    if doc == README:
        for cells in table_rows(section(text, "The CLI")):
            first = spans(cells[0])
            if first and first[0].startswith("aspen "):
                words = first[0].replace("\\", "").split()[1:]
                choices = (words[1].split("|") if len(words) > 1 and "|" in words[1]
                           and not words[1].startswith(("[", "-")) else [])
                for choice in choices:
                    if (words[0], choice) not in commands():
                        wrong.add(f"`aspen {words[0]}` has no sub-command {choice}")
                for path in [command_path([words[0], c]) for c in choices] or [command_path(words)]:
                    mentions.append((path, " ".join(cells)))
    else:
        for path, body in _cli_doc_sections().items():
            mentions.append((path, body))
    wrong |= {f"`aspen {' '.join(path)}` has no option {name}"
              for path, mention in mentions
              for name in options(mention) - allowed_options(path)}
    wrong = sorted(wrong)
    assert not wrong, f"{doc.name}: " + "; ".join(wrong) + " (check `aspen … --help`)"


def test_every_option_in_readme_is_an_option_of_aspen() -> None:
    """A bare ``--option`` in README.md (outside the spark-submit and pip lines) is an option of
    some ``aspen`` command."""
    every = {"--help", *set().union(*commands().values())}
    foreign = ("spark-submit", "pip ", "--conf", "jobs/")
    wrong = sorted({name for line in _text(README).splitlines()
                    if not any(word in line for word in foreign)
                    for name in options(line) - every})
    assert not wrong, f"README.md names {wrong}, options of no `aspen` command: fix or drop them"


# --- DAGs ---


def _documented_dags(doc: Path, title: str) -> dict[str, frozenset[str]]:
    found = {}
    for cells in table_rows(section(_text(doc), title)):
        names = spans(cells[0])
        if names and names[0].startswith("aspen_"):
            found[names[0]] = frozenset(spans(cells[1]))
    return found


@pytest.mark.parametrize(("doc", "title"), [(README, "Operating it"),
                                            (ARCHITECTURE, "Airflow DAGs")],
                         ids=["README", "architecture"])
def test_dags_and_tasks_match_the_docs(doc: Path, title: str) -> None:
    documented = _documented_dags(doc, title)
    problems = [f"add a row for `{dag}` with its tasks {sorted(tasks)}"
                for dag, tasks in sorted(dags().items()) if dag not in documented]
    problems += [f"drop the row of `{dag}`: dags/ has no such DAG"
                 for dag in sorted(set(documented) - set(dags()))]
    problems += [f"`{dag}`'s tasks are {sorted(tasks)}, the row says {sorted(documented[dag])}"
                 for dag, tasks in sorted(dags().items())
                 if dag in documented and documented[dag] != tasks]
    assert not problems, (f"{doc.name}, '{title}' (task ids as code spans in the second "
                          "column): " + "; ".join(problems))


def test_dags_are_counted_right_in_readme() -> None:
    words = {2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six"}
    count = words.get(len(dags()), str(len(dags())))
    assert f"{count} DAGs in `dags/`" in _text(README), (
        f"README.md's 'Operating it' must say '{count} DAGs in `dags/`'")


# --- dashboard pages ---


def test_every_dashboard_page_is_named() -> None:
    readme = section(_text(README), "A five-minute tour")
    dashboard = _text(DASHBOARD_DOC)
    missing = [title for title in pages()
               if title.lower() not in readme.lower() and f"**{title}**" not in dashboard]
    assert not missing, (
        f"pages {missing} of dashboards/page_registry.py are named neither in README.md's tour "
        "(the dashboard step) nor as **Title** in docs/operating-the-dashboard.md: name them")


# --- lake tables ---


def _documented_tables() -> set[str]:
    rows = table_rows(section(_text(ARCHITECTURE), "Tables in the lake"))
    return {name for cells in rows for name in spans(cells[0])}


def test_every_lake_table_is_in_the_architecture() -> None:
    missing = sorted(lake_tables() - _documented_tables())
    assert not missing, (
        f"docs/architecture.md, 'Tables in the lake': add a row (`name` | written by | holds) "
        f"for {missing}")


def test_architecture_lists_no_table_the_code_lacks() -> None:
    stale = sorted(_documented_tables() - lake_tables())
    assert not stale, (
        f"docs/architecture.md, 'Tables in the lake' lists {stale}, which no module names: drop "
        "the row, or name the table in a constant (`*_TABLE = \"…\"`)")


def test_the_collection_finds_tables() -> None:
    """The sources above still hold what they held when this test was written."""
    assert {"updates", "reachable", "view_changes", "queries", "reading_windows",
            "network_outputs", "ledger", "maintainer_lease", "q_<name>"} <= lake_tables()
    assert {"aspen_pipeline", "aspen_expire"} <= set(dags())
    assert ("query", "run") in commands() and "--again" in commands()[("ingest",)]
