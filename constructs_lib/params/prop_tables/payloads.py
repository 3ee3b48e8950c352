"""The table of ``LargePayloads``, what ``ResilientQueue(large_payloads=...)`` takes: the bucket,
whether consumers delete payloads, the lifecycle's margin and the runtime layer."""

from __future__ import annotations

from aws_cdk import aws_s3 as s3

from constructs_lib.params.kinds import Flag, Implements, Whole
from constructs_lib.params.table import Param, Range, Table
from constructs_lib.policy import payloads

MARGIN_DAYS_MAX = 365
"""Our bound: a payload kept a year past the last day its message can live is storage paid for
nothing (no message can point to it)."""

LARGE_PAYLOADS = Table(
    "LargePayloads",
    (
        Param(
            "bucket",
            Implements(s3.IBucket, "s3.IBucket", "s3.Bucket.from_bucket_name(stack, 'B', 'name')"),
            "one created for the queue (encrypted with the queue's key, TLS only, no public "
            "access, retained, a lifecycle on the queue's prefix)",
            "a bucket of yours: its lifecycle must keep the queue's prefix as long as the "
            "warning says",
            optional=True,
        ),
        Param(
            "consumers_delete",
            Flag(),
            "on",
            "consumers delete a payload once its message is processed (and get "
            "`s3:DeleteObject`); off leaves them to the lifecycle",
        ),
        Param(
            "margin_days",
            Whole("days"),
            f"{payloads.PAYLOAD_MARGIN_DAYS}",
            "days kept beyond the longest life of a message: the time to redrive a dead letter "
            "on its last day",
            range=Range(
                0, MARGIN_DAYS_MAX, "days", why="a year past a message's life is kept for nothing"
            ),
            fix="choose how many days past a message's life its payload stays",
            example="1",
        ),
        Param(
            "layer",
            Flag(),
            "on",
            "the layer holding `constructs_lib.large_payloads` on a Python consumer of the app; "
            "off when the function bundles the package",
        ),
    ),
)
