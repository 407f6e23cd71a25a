"""The session factory's choices that need no JVM: where the jars come from, who names the
master."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark import SparkContext

from aspen.errors import SetupError
from aspen.spark import session


@pytest.fixture
def no_running_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend no SparkContext exists yet, and clear the variables that name a master."""
    monkeypatch.setattr(SparkContext, "_active_spark_context", None)
    for name in ("PYSPARK_GATEWAY_PORT", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "SPARK_MASTER"):
        monkeypatch.delenv(name, raising=False)


def test_jars_found_in_the_repo_by_walking_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASPEN_JARS", raising=False)
    jars = session.find_delta_jars()
    assert [Path(j).name.split("-")[0] for j in jars] == ["delta", "delta"]
    assert all(Path(j).is_absolute() and Path(j).is_file() for j in jars)
    assert Path(jars[0]).parent.name == "jars"


def test_jars_from_env_folder_files_or_setup_error(tmp_path: Path, monkeypatch) -> None:
    for name in ("delta-spark_4.1_2.13-9.9.9.jar", "delta-storage-9.9.9.jar"):
        (tmp_path / name).write_bytes(b"")
    monkeypatch.setenv("ASPEN_JARS", str(tmp_path))
    assert [Path(j).name for j in session.find_delta_jars()] == [
        "delta-spark_4.1_2.13-9.9.9.jar", "delta-storage-9.9.9.jar"]
    monkeypatch.setenv("ASPEN_JARS", f"{tmp_path / 'delta-storage-9.9.9.jar'},{tmp_path / 'x.jar'}")
    with pytest.raises(SetupError, match="missing jar"):
        session.find_delta_jars()
    monkeypatch.delenv("ASPEN_JARS")
    with pytest.raises(SetupError, match="run `make setup`"):
        session.find_delta_jars(start=tmp_path / "elsewhere")


def test_master_default_env_and_spark_submit(no_running_spark, monkeypatch, tmp_path: Path) -> None:
    assert session.master_from_environment() == "local[2]"
    monkeypatch.setenv("SPARK_MASTER", "spark://example:7077")
    assert session.master_from_environment() == "spark://example:7077"
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--master yarn pyspark-shell")
    assert session.master_from_environment() is None
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS")
    (tmp_path / "spark-defaults.conf").write_text("spark.master  k8s://https://example\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert session.master_from_environment() is None


def test_conf_keeps_tables_at_reader_version_1() -> None:
    conf = session.SMALL_MACHINE_CONF
    assert conf["spark.databricks.delta.properties.defaults.enableDeletionVectors"] == "false"
    assert conf["spark.databricks.delta.properties.defaults.columnMapping.mode"] == "none"
    assert conf["spark.sql.session.timeZone"] == "UTC"
    assert conf["spark.ui.enabled"] == "false"
    assert "spark.master" not in conf and "spark.jars.packages" not in conf
