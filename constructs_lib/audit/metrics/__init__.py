"""Metrics input (``--metrics``): CloudWatch metric stream output, aggregated per series.

A metric stream delivers one data point per metric per minute through Firehose into S3
(``docs/audit/deployed.md``, "Metrics"). The audit does not judge data points: it judges, per queue and
per consumer function, a few figures over a window of days (the largest value, the sum, the
number of samples, the first and last data point and the value there). The work splits as it
does for templates:

- ``stream.py``: which objects to read (a file, a folder, an ``s3://`` prefix), which of them
  the window can skip by their Firehose date prefix, and one object's bytes within the caps;
- ``decode.py``: one object's bytes (JSON lines, gzip or Parquet) -> an Arrow table of the
  data points the audit keeps, and what was wrong with the object, if anything;
- ``aggregate.py``: data points -> ``model.SeriesRow`` and ``model.CoverageRow`` in one
  process (the local engine); ``spark/metrics.py`` does the same on Spark with the same
  decoding on the executors;
- ``observations.py``: the series joined to the queues they describe, into each context;
- ``ledger.py``: a queue's context -> its ledger over the window (``model.QueueLedger``), and
  the fleet's ledgers ranked (docs/audit/ledger.md).

Nothing here imports pyspark; pyarrow is needed (the ``spark`` extra installs it).
"""
