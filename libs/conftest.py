"""Names the package's doctests may use (``pytest --doctest-modules libs/aspen``).

``spark``: one SparkSession for the doctest run, started only when a doctest that runs (not
``+SKIP``) names it; ``lake``: Settings for a fresh, empty lake in the doctest's own temporary
folder. Examples that need a lake with data in it stay ``+SKIP`` (the tests run those paths).
"""

from __future__ import annotations

import doctest
import os
from collections.abc import Iterator

import pytest
from _pytest.doctest import DoctestItem

os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")


@pytest.fixture(scope="session")
def _doctest_spark() -> Iterator[object]:
    from aspen.spark.session import TEST_CONF, get_spark

    session = get_spark("aspen-doctests", extra_conf=TEST_CONF)
    yield session
    session.stop()


def _runs(example: doctest.Example, name: str) -> bool:
    return name in example.source and not example.options.get(doctest.SKIP, False)


@pytest.fixture(autouse=True)
def _doctest_names(request: pytest.FixtureRequest, doctest_namespace: dict,
                   tmp_path_factory: pytest.TempPathFactory) -> None:
    item = request.node
    if not isinstance(item, DoctestItem) or item.dtest is None:
        return
    examples = item.dtest.examples
    if any(_runs(e, "spark") for e in examples):
        doctest_namespace["spark"] = request.getfixturevalue("_doctest_spark")
    if any(_runs(e, "lake") for e in examples):
        from aspen.settings import Settings

        doctest_namespace["lake"] = Settings(lake=str(tmp_path_factory.mktemp("doctest") / "lake"))
