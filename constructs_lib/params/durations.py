"""Durations in the seconds AWS counts: the one conversion from a CDK ``Duration``.

AWS counts every duration the library takes in whole seconds (Lambda's function timeout in steps
of one second, SQS's retention and visibility timeout, CloudWatch's periods). CDK's own
``Duration.to_seconds()`` refuses a fraction by raising (its ``integral`` option, true by
default), naming neither the parameter nor a fix; this conversion returns the fraction instead,
so that each caller words the refusal: the parameter tables offer the whole seconds a fix would
use, and a function's own timeout is refused by CDK before it is ever read.
"""

from __future__ import annotations

from aws_cdk import Duration, Token


def duration_seconds(duration: Duration) -> int | float | None:
    """``duration`` in seconds: an int when whole (``Duration.minutes(0.5)`` is 30), a float when
    it holds a fraction of a second (``Duration.millis(1500)`` is 1.5), None for an unresolved
    token. A token given in another unit than seconds cannot be converted: CDK raises."""
    seconds = duration.to_seconds(integral=False)
    if isinstance(seconds, int):
        return seconds
    if Token.is_unresolved(seconds):
        return None
    return int(seconds) if seconds.is_integer() else seconds
