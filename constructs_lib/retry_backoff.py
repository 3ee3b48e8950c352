"""``RetryBackoff``: what ``ResilientQueue.add_lambda_consumer(retry_backoff=...)`` takes, in CDK
types (durations), and its conversion to the ``constructs_lib.backoff.Backoff`` a handler reads.

The fields are declared, with their kinds and ranges, in ``params.prop_tables.RETRY_BACKOFF``
and checked by the call that receives the settings (``consumer.backoff_layer``), which knows the
queue: its ``max_receive_count`` and retention complete the schedule.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aws_cdk import Duration

from constructs_lib import backoff


def _seconds(value: int) -> Duration:
    return Duration.seconds(value)


@dataclass(frozen=True)
class RetryBackoff:
    """Retries with exponential backoff for a Lambda consumer that reports batch item failures.

    After the n-th receive of a message fails, the handler (with ``constructs_lib.backoff``)
    sets its visibility to ``min(cap, base x factor ** (n - 1))``, shortened at random by up to
    ``jitter`` of itself; on the last receive (``max_receive_count``) it does not wait, so the
    next receive moves the message to the dead-letter queue.

    :param base: the first wait, 1-43,200 s (whole seconds). Default: 10 s.
    :param factor: growth per receive, 1-10 (1: a constant wait). Default: 2.
    :param cap: the longest wait, ``base``-43,200 s (whole seconds). Default: 15 minutes.
    :param jitter: the fraction of each wait drawn at random, 0-1 (0: none; 1: anywhere from 0
        to the wait). Default: 0.5.
    :param layer: add the Lambda layer holding ``constructs_lib.backoff`` to a Python function
        defined in the app; off for functions that bundle the package themselves. Default: on.
    """

    base: Duration = field(default_factory=lambda: _seconds(backoff.BASE_DEFAULT))
    factor: float = backoff.FACTOR_DEFAULT
    cap: Duration = field(default_factory=lambda: _seconds(backoff.CAP_DEFAULT))
    jitter: float = backoff.JITTER_DEFAULT
    layer: bool = True

    def to_backoff(
        self, max_receive_count: int | None, retention_seconds: int | None
    ) -> backoff.Backoff:
        """The schedule a handler reads, with the source queue's receive limit and retention
        (None when they are tokens). Call it once the consumer's checks passed: the durations
        are then whole seconds, known at synth."""
        return backoff.Backoff(
            base_seconds=int(self.base.to_seconds()),
            factor=self.factor,
            cap_seconds=int(self.cap.to_seconds()),
            jitter=self.jitter,
            max_receive_count=max_receive_count,
            retention_seconds=retention_seconds,
        )
