# Aspen: `make demo` runs the main job on the embedded default; `make test` runs the whole suite.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
export PYARROW_IGNORE_TIMEZONE := 1

.PHONY: setup demo test test-fast lint bench bench-report clean

setup:
	@infra/install.sh

demo: setup
	$(VENV)/bin/aspen demo

# two pytest workers (pytest-xdist), a module per worker at a time: the Spark, Delta and Airflow
# tests wait on JVMs, subprocesses and files long enough for two to share the 2 cores; the
# package's doctests run on the same workers, in the same run (measurements: docs/performance.md)
test: setup
	$(PY) -m pytest -q --durations=15 -n 2 --dist loadfile --doctest-modules libs/aspen tests

test-fast: setup
	$(PY) -m pytest -q --doctest-modules libs/aspen
	$(PY) -m pytest -q tests -m "not spark and not airflow and not browser"

lint: setup
	$(VENV)/bin/ruff check libs jobs dags dashboards tests benchmarks

bench: setup
	$(VENV)/bin/aspen bench

# the full suite (hours on 2 cores), then its summary, targets and plots into docs/bench
bench-report: setup
	$(VENV)/bin/aspen bench --full --out results/bench-full
	mkdir -p docs/bench
	cp results/bench-full/summary.md results/bench-full/targets.csv results/bench-full/*.png docs/bench/

clean:
	rm -rf lakehouse .airflow results
