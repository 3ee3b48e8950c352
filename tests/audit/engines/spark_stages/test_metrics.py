"""The metrics input's aggregation on Spark (``engines/spark/metrics.py``), on a few data points.

The expected series and coverage are added up by hand from the points.
"""

from __future__ import annotations

from typing import Any

from constructs_lib.audit.engines.spark import metrics
from tests.support.frames import assert_same_rows, frame

AGE = ("111", "us-east-1", "AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "orders")
ERRORS = ("111", "us-east-1", "AWS/Lambda", "Errors", "FunctionName", "handler")
# AWS/SQS without a dimension: kept for the account and region's coverage only.
COVERAGE_ONLY = ("111", "us-east-1", "AWS/SQS", "NumberOfEmptyReceives", "", "")
NO_OBJECT = (None, None, None)
POINTS = [
    (*NO_OBJECT, *AGE, 30.0, 60.0, 2.0, 1000),
    (*NO_OBJECT, *AGE, 50.0, 70.0, 3.0, 2000),
    (*NO_OBJECT, *AGE, 90.0, 90.0, 1.0, 500),  # before the window
    (*NO_OBJECT, *COVERAGE_ONLY, 0.0, 0.0, 1.0, 1500),
    (*NO_OBJECT, *ERRORS, 1.0, 1.0, 1.0, 1200),
]
OBJECT = ("s3://bucket/o1", None, 5, *(None,) * 10)


def test_the_points_in_the_window_are_the_points_after_its_start(spark: Any) -> None:
    decoded = frame(spark, metrics.DECODED_SCHEMA, [*POINTS, OBJECT])
    in_window = [p for p in POINTS if p[-1] != 500]
    assert_same_rows(
        decoded.transform(metrics.points_in_window, 900),
        frame(spark, metrics.DECODED_SCHEMA, in_window),
    )
    assert_same_rows(
        decoded.transform(metrics.points_in_window, None),
        frame(spark, metrics.DECODED_SCHEMA, POINTS),
    )


def test_a_series_adds_up_its_points(spark: Any) -> None:
    points = frame(spark, metrics.DECODED_SCHEMA, [p for p in POINTS if p[-1] != 500])
    account, region, namespace, metric, _dimension, name = AGE
    age = (account, region, namespace, metric, name, 50.0, 130.0, 5.0, 1000, 2000)
    errors = ("111", "us-east-1", "AWS/Lambda", "Errors", "handler", 1.0, 1.0, 1.0, 1200, 1200)
    assert_same_rows(
        points.transform(metrics.series_frame),
        frame(spark, metrics.SERIES_SCHEMA, [age, errors]),
    )


def test_coverage_spans_an_account_and_region_s_sqs_points(spark: Any) -> None:
    points = frame(spark, metrics.DECODED_SCHEMA, [p for p in POINTS if p[-1] != 500])
    assert_same_rows(
        points.transform(metrics.coverage_frame),
        frame(spark, metrics.COVERAGE_SCHEMA, [("111", "us-east-1", 1000, 2000)]),
    )
