"""Streams of sensor readings with fine-grained provenance (Ariadne: Glavic et al. 2012).

Pure Python, no Spark and no lake: the windowed operators and the provenance of their outputs
(the ids of the readings behind each one), the encodings that carry it, and the declarative
definition it is checked against. What runs them over the lake's ``readings`` table (on Spark
Structured Streaming or in process) and keeps their outputs is :mod:`aspen.readings`.
"""
