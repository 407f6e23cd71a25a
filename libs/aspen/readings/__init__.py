"""The lake side of sensor readings: triggering rules and stream networks over ``readings``.

The pure operators live in :mod:`aspen.streams` (no Spark, no lake); this package runs them over
the lake's append-only ``readings`` table and keeps what they made, as :mod:`aspen.queries` runs
the plans of :mod:`aspen.optimizer`:

- a triggering rule (per-sensor windows or Ariadne's zone alarm): the rows its state function
  emits (:mod:`~aspen.readings.rule_rows`), the tables it writes and the rules a lake ran
  (:mod:`~aspen.readings.rule_tables`), the Spark stream (:mod:`~aspen.readings.rule_stream`),
  a run in process (:mod:`~aspen.readings.rule_local`) and why a sensor is triggered
  (:mod:`~aspen.readings.rule_provenance`);
- a stream network declared as JSON: its tables and a run in process
  (:mod:`~aspen.readings.network_tables`), the Spark stream
  (:mod:`~aspen.readings.network_stream`) and why an output exists
  (:mod:`~aspen.readings.network_provenance`);
- shared by both: the provenance modes (:mod:`~aspen.readings.modes`), the stream driver
  (:mod:`~aspen.readings.driver`) and the SQL reads of the lake's tables the explanations make
  (:mod:`~aspen.readings.lake_sql`).
"""
