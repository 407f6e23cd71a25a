"""Run the ``aspen_pipeline`` DAG once, in-process, with Airflow's ``dag.test()``.

Used by ``aspen demo``. Airflow gets its own home (``./.airflow`` by default, SQLite metadata
DB, migrated once), the repository's ``dags/`` folder, and the lake and inbox as DAG params,
with the ``follower`` Param off: the run ingests, applies and maintains itself and leaves no
follower running. The run happens in a child process so Airflow's configuration never leaks
into the caller.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from aspen.errors import ConfigError, SetupError
from aspen.settings import Settings

__all__ = ["repo_root", "run_pipeline_once"]

_RUNNER = r"""
import json, sys
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])
if bag.import_errors:
    print("IMPORT-ERRORS " + json.dumps({k: str(v) for k, v in bag.import_errors.items()}))
    sys.exit(3)
dag = bag.dags["aspen_pipeline"]
for task in dag.tasks:  # a demo run should fail fast, not wait on retry delays
    task.retries = 0
run = dag.test(run_conf=json.loads(sys.argv[2]))
states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
print("TASK-STATES " + json.dumps(states))
sys.exit(0 if str(run.state) == "success" else 4)
"""


def repo_root() -> Path:
    """The checkout the ``aspen`` package was installed from (editable install)."""
    root = Path(__file__).resolve().parents[3]
    if not (root / "dags" / "aspen_pipeline.py").is_file():
        raise ConfigError(
            "the DAG folder is not next to the aspen package; "
            "run the demo from the repository checkout"
        )
    return root


def run_pipeline_once(
    settings: Settings, inbox: Path, airflow_home: Path, log: Path
) -> dict[str, str]:
    """Run the pipeline DAG once; return task id → state. Output goes to ``log``."""
    root = repo_root()
    airflow_home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update(
        {
            "AIRFLOW_HOME": str(airflow_home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{airflow_home / 'airflow.db'}",
            "AIRFLOW__CORE__DAGS_FOLDER": str(root / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "ASPEN_LAKE": settings.lake,
            # the run's lake and inbox Params must be the configured ones (check_run_path)
            "ASPEN_INBOX": str(inbox),
            "ASPEN_PIPELINE_SCHEDULE": "none",
        }
    )
    bindir = Path(sys.executable).parent
    with log.open("w") as out:
        migrated = subprocess.run(
            [str(bindir / "airflow"), "db", "migrate"], env=env, stdout=out,
            stderr=subprocess.STDOUT
        )
        if migrated.returncode != 0:
            raise SetupError(f"`airflow db migrate` failed; see {log}")
        # no warm follower: the run does every step itself and leaves no process behind
        conf = json.dumps({"lake": settings.lake, "inbox": str(inbox), "follower": False})
        run = subprocess.run(
            [sys.executable, "-c", _RUNNER, str(root / "dags"), conf],
            env=env, stdout=subprocess.PIPE, stderr=out, text=True,
        )
    out_lines = run.stdout.splitlines()
    with log.open("a") as out:
        out.write(run.stdout)
    states = next(
        (json.loads(line[len("TASK-STATES "):]) for line in out_lines
         if line.startswith("TASK-STATES ")),
        None,
    )
    if states is None:
        raise SetupError(f"the Airflow run did not complete; see {log}")
    return states
