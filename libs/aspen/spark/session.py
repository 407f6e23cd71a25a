"""The one SparkSession factory: Delta Lake from two local jars, master from the environment.

Nothing here names a master, a host or an absolute path. The master comes from
``spark-submit --master`` (or ``spark-defaults.conf``), else from ``$SPARK_MASTER``, else the
embedded default ``local[2]``. The Delta jars come from ``$ASPEN_JARS`` or from ``infra/jars``
found by walking up from this package (``make setup`` fetches them); Ivy never resolves anything.
Spark's own log goes to a file, not the terminal: the driver JVM gets ``infra/log4j2.properties``
(found the same way) through ``spark.driver.defaultJavaOptions`` (:func:`log4j2_java_options`),
which writes WARN and above to :func:`spark_log_file` and only ERROR lines, one line each, to
the terminal.

>>> SMALL_MACHINE_CONF["spark.databricks.delta.properties.defaults.enableDeletionVectors"]
'false'
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from aspen.errors import SetupError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_LOCAL_MASTER",
    "JAR_PATTERNS",
    "LOG_OPTIONS_CONF",
    "SMALL_MACHINE_CONF",
    "SHORT_JOB_CONF",
    "TEST_CONF",
    "TINY_DATA_CONF",
    "TINY_DATA_SQL_CONF",
    "TINY_TABLE_BYTES",
    "find_delta_jars",
    "log4j2_java_options",
    "master_from_environment",
    "get_spark",
    "spark_log_file",
    "sql_conf_for_tables",
    "temporary_conf",
]

#: The embedded default when neither spark-submit nor ``$SPARK_MASTER`` names a master.
DEFAULT_LOCAL_MASTER = "local[2]"

#: The two jars Delta needs on the class path (delta-spark for the Spark minor, and delta-storage).
JAR_PATTERNS: tuple[str, ...] = ("delta-spark_*.jar", "delta-storage-*.jar")

#: Conf for a small machine, and to keep every table Spark writes at Delta reader version 1
#: (delta-rs reads them: no deletion vectors, no column mapping).
SMALL_MACHINE_CONF: dict[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.dynamicAllocation.enabled": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.databricks.delta.properties.defaults.enableDeletionVectors": "false",
    "spark.databricks.delta.properties.defaults.columnMapping.mode": "none",
    "spark.databricks.delta.properties.defaults.enableChangeDataFeed": "false",
    "spark.databricks.delta.properties.defaults.minReaderVersion": "1",
    "spark.databricks.delta.properties.defaults.minWriterVersion": "2",
}

#: Conf for tables of a few hundred rows, where Spark's CPU goes to planning, not to data:
#: expressions interpreted rather than compiled (no Janino compile per query), no adaptive
#: re-planning of each stage as a job of its own, the serial garbage collector (no concurrent
#: GC threads on 2 cores). Not an application default: on large tables compiled code wins, so
#: put these in ``spark-defaults.conf`` for a small lake (measurements: docs/performance.md).
#: Their SQL part runs the rounds and the publish, and the apply while the registry is small
#: (:data:`TINY_TABLE_BYTES`).
TINY_DATA_CONF: dict[str, str] = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC",
}

#: :data:`TINY_DATA_CONF` for a short-lived driver on a small lake (a ``spark-submit`` job per
#: Airflow task): the JVM compiles with C1 only (``-XX:TieredStopAtLevel=1``), so it spends no CPU
#: on C2 compilations that a job of seconds never pays back. Not for a long-lived driver, whose
#: later batches run slower without C2 (measurements: docs/performance.md). The tests'
#: ``spark-defaults.conf`` holds it.
SHORT_JOB_CONF: dict[str, str] = {
    **TINY_DATA_CONF,
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
}

#: The SQL settings of :data:`TINY_DATA_CONF`, which a running session can change: a job sets
#: them around its phases that handle few rows only (the rounds and the publish of ``maintain
#: --runtime spark``), whatever the application's conf.
TINY_DATA_SQL_CONF: dict[str, str] = {
    name: value for name, value in TINY_DATA_CONF.items() if name.startswith("spark.sql.")
}

#: Tables whose data files hold at most this many bytes (as the Delta log gives them) count as
#: tiny: a phase that reads and MERGEs only such tables runs with :data:`TINY_DATA_SQL_CONF`
#: (below this size it saves time, above it no longer does; measurements: docs/performance.md).
TINY_TABLE_BYTES = 8 * 1024 * 1024

#: Conf for a test run's one SparkSession (on top of :data:`SMALL_MACHINE_CONF`): tiny tables,
#: so one shuffle partition, no compression, and :data:`TINY_DATA_CONF`; the test suite
#: and the doctests use it.
TEST_CONF: dict[str, str] = {
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "1",
    "spark.rdd.compress": "false",
    "spark.shuffle.compress": "false",
    "spark.databricks.delta.retentionDurationCheck.enabled": "false",
    "spark.databricks.delta.snapshotPartitions": "1",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "1",
    **TINY_DATA_CONF,
}

_DELTA_EXTENSION_CLASS = "io.delta.sql.DeltaSparkSessionExtension"


def _jars_in(folder: Path) -> list[Path] | None:
    found = []
    for pattern in JAR_PATTERNS:
        matches = sorted(folder.glob(pattern))
        if not matches:
            return None
        found.append(matches[-1])
    return found


def find_delta_jars(start: Path | None = None) -> list[str]:
    """The local Delta jar files, as absolute paths computed at run time.

    ``$ASPEN_JARS`` may name a folder or a comma-separated list of jar files; otherwise the
    folder ``infra/jars`` is looked for in ``start`` (default: this package) and its parents.

    >>> all(p.endswith(".jar") for p in find_delta_jars())
    True
    """
    env = os.environ.get("ASPEN_JARS", "").strip()
    if env:
        candidate = Path(env)
        if "," not in env and candidate.is_dir():
            jars = _jars_in(candidate)
            if jars:
                return [str(p.resolve()) for p in jars]
            raise SetupError(
                f"ASPEN_JARS={env} holds no {' + '.join(JAR_PATTERNS)}; run `make setup`")
        files = [Path(part.strip()) for part in env.split(",") if part.strip()]
        missing = [str(p) for p in files if not p.is_file()]
        if missing:
            raise SetupError(f"ASPEN_JARS names missing jar file(s): {', '.join(missing)}")
        return [str(p.resolve()) for p in files]
    here = (start or Path(__file__)).resolve()
    for folder in [here, *here.parents]:
        jars_dir = folder / "infra" / "jars"
        if jars_dir.is_dir():
            jars = _jars_in(jars_dir)
            if jars:
                return [str(p) for p in jars]
    raise SetupError(
        "run `make setup`: the Delta Lake jars (delta-spark_4.1_2.13, delta-storage) were not "
        "found in infra/jars, and ASPEN_JARS is not set"
    )


#: The driver JVM option that carries the log configuration (prepended to a deployment's
#: ``spark.driver.extraJavaOptions``, which it leaves alone).
LOG_OPTIONS_CONF = "spark.driver.defaultJavaOptions"


def spark_log_file() -> Path:
    """Where Spark's JVM log goes: ``$ASPEN_LOG_DIR/spark.log``, else ``spark.log`` in
    ``aspen-logs-<user>`` under the temporary folder.

    >>> spark_log_file().name
    'spark.log'
    """
    import getpass
    import tempfile

    folder = os.environ.get("ASPEN_LOG_DIR", "").strip()
    if folder:
        return Path(folder).expanduser() / "spark.log"
    return Path(tempfile.gettempdir()) / f"aspen-logs-{getpass.getuser()}" / "spark.log"


def log4j2_java_options(start: Path | None = None) -> str | None:
    """The driver JVM options that make it log by ``infra/log4j2.properties`` (looked for in
    ``start``, default this package, and its parents) into :func:`spark_log_file`; None when
    the file is not there (an installed package without the checkout: Spark's defaults).

    >>> "-Dlog4j2.configurationFile=file:" in (log4j2_java_options() or "")
    True
    """
    here = (start or Path(__file__)).resolve()
    for folder in [here, *here.parents]:
        config = folder / "infra" / "log4j2.properties"
        if config.is_file():
            log_file = str(spark_log_file())
            quoted = f'"{log_file}"' if any(c.isspace() for c in log_file) else log_file
            return f"-Dlog4j2.configurationFile={config.as_uri()} -Daspen.log.file={quoted}"
    return None


def master_from_environment() -> str | None:
    """The master to set in code, or ``None`` when spark-submit / Spark conf already names one.

    ``None`` when a Spark JVM is already running with ``spark.master`` (we were launched by
    ``spark-submit``), or when ``PYSPARK_SUBMIT_ARGS`` or ``spark-defaults.conf`` names one;
    ``$SPARK_MASTER`` next; ``local[2]`` last.

    >>> (os.environ.get("SPARK_MASTER") is not None
    ...  or master_from_environment() in (None, "local[2]"))
    True
    """
    from pyspark import SparkConf, SparkContext

    if SparkContext._active_spark_context is not None:
        return None
    if os.environ.get("PYSPARK_GATEWAY_PORT"):  # launched by spark-submit: the JVM holds the conf
        SparkContext._ensure_initialized()
        if SparkConf().contains("spark.master"):
            return None
    if "--master" in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        return None
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if conf_dir:
        defaults = Path(conf_dir) / "spark-defaults.conf"
        if defaults.is_file():
            for line in defaults.read_text().splitlines():
                if line.split() and line.split()[0] == "spark.master":
                    return None
    return os.environ.get("SPARK_MASTER") or DEFAULT_LOCAL_MASTER


def _log_level() -> str:
    return os.environ.get("ASPEN_SPARK_LOG_LEVEL", "WARN")


def _prepare_running_jvm(jars: list[str]) -> None:
    """Under ``spark-submit`` the driver JVM is already up: quiet it and put Delta on its class
    path.

    ``spark-submit jobs/x.py`` without ``--jars`` starts the driver without Delta; ``spark.jars``
    set afterwards reaches executors but not the driver's class loader, so the jars are added to
    spark-submit's (mutable) context class loader here. With ``--jars``/``--packages`` or a
    cluster image that already has Delta, nothing is added.
    """
    from py4j.protocol import Py4JJavaError
    from pyspark import SparkContext

    if not os.environ.get("PYSPARK_GATEWAY_PORT") or SparkContext._active_spark_context is not None:
        return
    SparkContext._ensure_initialized()
    jvm = SparkContext._jvm
    try:
        log4j = jvm.org.apache.logging.log4j
        log4j.core.config.Configurator.setRootLevel(log4j.Level.valueOf(_log_level()))
    except Py4JJavaError:  # pragma: no cover - another logging backend
        pass
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        jvm.java.lang.Class.forName(_DELTA_EXTENSION_CLASS, False, loader)
        return
    except Py4JJavaError:
        pass
    try:
        for jar in jars:
            loader.addURL(jvm.java.io.File(jar).toURI().toURL())
    except Exception as err:  # noqa: BLE001 - any py4j failure means the same thing
        raise SetupError(
            "the Spark driver has no Delta Lake classes and they could not be added; pass "
            f"--jars {','.join(jars)} to spark-submit"
        ) from err


def _runs_locally(master: str | None) -> bool:
    """Whether the effective master is ``local…`` (ours, or the one spark-submit was given)."""
    if master is None:
        from pyspark import SparkConf, SparkContext

        if SparkContext._jvm is None:
            return False
        master = SparkConf().get("spark.master", "")
    return master.startswith("local")


#: Loggers whose warnings say nothing to an Aspen user: releasing a round's local checkpoint on
#: purpose warns, once per round, that its lineage cannot be recomputed.
_QUIET_LOGGERS = ("org.apache.spark.rdd.MapPartitionsRDD",)


#: PySpark's own Python loggers that print a failing query's whole JVM error as JSON to stderr
#: (``pyspark.errors.exceptions.base``); the command prints the error's one line itself.
_PYSPARK_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def _quiet_python_error_logs() -> None:
    """Keep PySpark's query-context error loggers off the terminal. They must be PySpark's
    own logger class (their calls pass keywords a plain ``Logger`` refuses): made by it, then
    disabled."""
    from pyspark.logger import PySparkLogger

    for name in _PYSPARK_ERROR_LOGGERS:
        PySparkLogger.getLogger(name).disabled = True


def _quiet_logs(spark: SparkSession) -> None:
    _quiet_python_error_logs()
    spark.sparkContext.setLogLevel(_log_level())
    jvm = spark.sparkContext._jvm
    try:
        log4j = jvm.org.apache.logging.log4j
        for name in _QUIET_LOGGERS:
            log4j.core.config.Configurator.setLevel(name, log4j.Level.ERROR)
    except Exception:  # noqa: BLE001 - another logging backend: the warnings stay
        pass


def get_spark(app_name: str = "aspen", extra_conf: Mapping[str, str] | None = None) -> SparkSession:
    """A SparkSession with Delta Lake (local jars), UTC, small-machine defaults and quiet logs.

    ``extra_conf`` overrides the defaults (e.g. ``{"spark.sql.shuffle.partitions": "1"}`` in tests).
    The master is set only when the environment names none (see :func:`master_from_environment`).

    >>> spark = get_spark("doc")
    >>> spark.conf.get("spark.sql.session.timeZone")
    'UTC'
    """
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    jars = find_delta_jars()
    from pyspark.sql import SparkSession

    _prepare_running_jvm(jars)
    builder = SparkSession.builder.appName(app_name)
    master = master_from_environment()
    if master is not None:
        builder = builder.master(master)
    conf = dict(SMALL_MACHINE_CONF)
    conf["spark.jars"] = ",".join(jars)
    log_options = log4j2_java_options()
    if log_options:  # read when this call starts the driver JVM; spark-submit passes its own
        conf[LOG_OPTIONS_CONF] = log_options
    conf.update(extra_conf or {})
    if _runs_locally(master) and not os.environ.get("PYSPARK_PYTHON"):
        # local Python workers must import aspen: use this interpreter (a cluster sets its own)
        os.environ["PYSPARK_PYTHON"] = sys.executable
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    _quiet_logs(spark)
    return spark


def sql_conf_for_tables(data_bytes: int) -> dict[str, str]:
    """The SQL conf for a phase whose largest table holds ``data_bytes`` bytes of data files:
    :data:`TINY_DATA_SQL_CONF` up to :data:`TINY_TABLE_BYTES`, none above (the application's
    own conf then plans it). Use it with :func:`temporary_conf`.

    >>> sql_conf_for_tables(600_000) == TINY_DATA_SQL_CONF
    True
    >>> sql_conf_for_tables(34_000_000)
    {}
    """
    return dict(TINY_DATA_SQL_CONF) if data_bytes <= TINY_TABLE_BYTES else {}


@contextmanager
def temporary_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """Set runtime ``settings`` on ``spark`` for the ``with`` block, then put back the values
    they had (a job's phase that wants other SQL settings than the application's).

    >>> before = spark.conf.get("spark.sql.shuffle.partitions")
    >>> with temporary_conf(spark, {"spark.sql.shuffle.partitions": "3"}):
    ...     spark.conf.get("spark.sql.shuffle.partitions")
    '3'
    >>> spark.conf.get("spark.sql.shuffle.partitions") == before
    True
    >>> with temporary_conf(spark, {"spark.aspen.example": "on"}):  # a setting the session lacked
    ...     spark.conf.get("spark.aspen.example")
    'on'
    >>> spark.conf.get("spark.aspen.example", None) is None  # is unset again
    True
    """
    before = {name: spark.conf.get(name, None) for name in settings}
    for name, value in settings.items():
        spark.conf.set(name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                spark.conf.unset(name)
            else:
                spark.conf.set(name, value)
