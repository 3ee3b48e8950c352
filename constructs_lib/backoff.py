"""Retries with exponential backoff for SQS-triggered Lambda functions: what a handler imports.

With partial batch responses a failed message comes back after the queue's full visibility
timeout every time, so a downstream outage either burns through ``maxReceiveCount`` in minutes
or waits six function timeouts between tries. A handler that sets each failed message's
visibility with ``ChangeMessageVisibility`` before reporting it in ``batchItemFailures`` decides
when it comes back instead: later with every receive, up to a cap.

This module imports no CDK (the Lambda Python runtime has boto3, not aws-cdk-lib), so a function
can ship it. ``ResilientQueue.add_lambda_consumer(retry_backoff=...)`` writes a ``Backoff`` into
the function's environment (``Backoff.to_environment``) and checks, at synth, that a failing
message still reaches the dead-letter queue before it expires (``worst_case_seconds``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from constructs_lib import limits

# ChangeMessageVisibility VisibilityTimeout: 0 to 43,200 s (12 hours) (SQS API reference), the
# queue attribute's range.
VISIBILITY_MAX: Final = limits.VISIBILITY_TIMEOUT_MAX

BASE_DEFAULT: Final = 10
FACTOR_DEFAULT: Final = 2.0
CAP_DEFAULT: Final = 900
JITTER_DEFAULT: Final = 0.5

# The variables the construct writes and the handler reads. The receive limit and the retention
# let the handler stop waiting on the last receive and never hold a message past its expiry.
ENV_BASE: Final = "CONSTRUCTS_LIB_BACKOFF_BASE_SECONDS"
ENV_FACTOR: Final = "CONSTRUCTS_LIB_BACKOFF_FACTOR"
ENV_CAP: Final = "CONSTRUCTS_LIB_BACKOFF_CAP_SECONDS"
ENV_JITTER: Final = "CONSTRUCTS_LIB_BACKOFF_JITTER"
ENV_MAX_RECEIVE_COUNT: Final = "CONSTRUCTS_LIB_BACKOFF_MAX_RECEIVE_COUNT"
ENV_RETENTION: Final = "CONSTRUCTS_LIB_BACKOFF_RETENTION_SECONDS"


class BackoffError(ValueError):
    """A backoff setting out of range, or an environment variable that does not read as one."""


@dataclass(frozen=True)
class Backoff:
    """How long a failed message waits before its next receive.

    After the n-th receive fails, the message becomes visible again after
    ``min(cap, base x factor ** (n - 1))`` seconds, shortened at random by up to ``jitter`` of
    itself (so that messages failing together do not come back together), never beyond SQS's
    12-hour visibility maximum. On its last receive (``max_receive_count``) it does not wait:
    its next receive moves it to the dead-letter queue.

    :param base_seconds: the first wait, 1-43,200 s. Default: 10.
    :param factor: growth per receive, 1-10 (1: a constant wait). Default: 2.
    :param cap_seconds: the longest wait, ``base_seconds``-43,200 s. Default: 900 (15 minutes).
    :param jitter: the fraction of each wait drawn at random, 0-1 (0: none; 1: "full jitter",
        anywhere from 0 to the wait). Default: 0.5.
    :param max_receive_count: the source queue's ``maxReceiveCount``, 1-1,000, or None when it is
        not known (every failure then waits). Default: None.
    :param retention_seconds: the source queue's retention period, or None. A wait never runs
        past a message's expiry. Default: None.
    """

    base_seconds: int = BASE_DEFAULT
    factor: float = FACTOR_DEFAULT
    cap_seconds: int = CAP_DEFAULT
    jitter: float = JITTER_DEFAULT
    max_receive_count: int | None = None
    retention_seconds: int | None = None

    def __post_init__(self) -> None:
        problems: list[str] = []
        for field, (_, kind) in _ENVIRONMENT.items():
            value = getattr(self, field)
            if value is None and field in _OPTIONAL:
                continue
            low, high = _RANGES[field]
            problems += _range(field, value, low, high, whole=kind is int)
        if not problems and self.cap_seconds < self.base_seconds:
            problems.append(
                f"cap_seconds {self.cap_seconds} is below base_seconds {self.base_seconds}: raise "
                "the cap or lower the first wait"
            )
        if problems:
            raise BackoffError("; ".join(problems))

    def ceiling(self, receive_count: int) -> int:
        """The longest wait after the ``receive_count``-th receive failed, in whole seconds
        (0 on the last receive)."""
        if self.max_receive_count is not None and receive_count >= self.max_receive_count:
            return 0
        exponent = max(receive_count, 1) - 1
        # factor ** exponent overflows floats long before 1,000 receives: compare in logs.
        if exponent * math.log(self.factor) >= math.log(self.cap_seconds / self.base_seconds):
            return self.cap_seconds
        return min(self.cap_seconds, math.ceil(self.base_seconds * self.factor**exponent))

    def delay(self, receive_count: int, rng: random.Random | None = None) -> int:
        """The wait to set after the ``receive_count``-th receive failed: the ceiling, less a
        random share of up to ``jitter`` of it."""
        ceiling = self.ceiling(receive_count)
        if ceiling == 0 or self.jitter == 0:
            return ceiling
        draw = (rng or random).random()
        return max(0, min(ceiling, math.ceil(ceiling * (1 - self.jitter * draw))))

    def worst_case_seconds(self, visibility_timeout: int, function_timeout: int) -> int:
        """The longest a message that fails every receive takes to reach the dead-letter queue.

        Each receive holds it for at most the function timeout and then the wait, or the queue's
        visibility timeout when the function never reports it (a crash, a timeout), whichever is
        longer. Needs ``max_receive_count``.
        """
        if self.max_receive_count is None:
            raise BackoffError(
                "worst_case_seconds needs max_receive_count, which is None: set it to the "
                "queue's maxReceiveCount (1-1,000)"
            )
        return sum(
            max(visibility_timeout, function_timeout + self.ceiling(n))
            for n in range(1, self.max_receive_count + 1)
        )

    def to_environment(self) -> dict[str, str]:
        """The function environment variables that carry these settings."""
        variables = {
            ENV_BASE: str(self.base_seconds),
            ENV_FACTOR: repr(float(self.factor)),
            ENV_CAP: str(self.cap_seconds),
            ENV_JITTER: repr(float(self.jitter)),
        }
        if self.max_receive_count is not None:
            variables[ENV_MAX_RECEIVE_COUNT] = str(self.max_receive_count)
        if self.retention_seconds is not None:
            variables[ENV_RETENTION] = str(self.retention_seconds)
        return variables

    @classmethod
    def from_environment(cls, environment: Mapping[str, str]) -> Backoff:
        """The settings in ``environment`` (``os.environ`` in a function); each absent or empty
        variable takes its default. A variable that does not read as a number, or whose number
        is out of range, is a ``BackoffError`` naming the variable, its value, the range and the
        fix."""
        values: dict[str, int | float | None] = {}
        for field, (name, kind) in _ENVIRONMENT.items():
            text = environment.get(name)
            if text is None or text.strip() == "":
                continue
            try:
                values[field] = kind(text)
            except ValueError:
                low, high = _RANGES[field]
                kind_name = "a whole number" if kind is int else "a number"
                raise BackoffError(
                    f"environment variable {name}={_shown(text)} is not {kind_name} from "
                    f"{_number(low)} to {_number(high)}: set it to one, or remove it for the default"
                ) from None
        try:
            return cls(**values)  # type: ignore[arg-type]
        except BackoffError as error:
            names = ", ".join(f"{_ENVIRONMENT[field][0]}={values[field]!r}" for field in values)
            raise BackoffError(f"environment variables {names}: {error}") from None


# Each setting's variable and how it reads, and its range (the checks of __post_init__).
_ENVIRONMENT: Final[dict[str, tuple[str, type[int] | type[float]]]] = {
    "base_seconds": (ENV_BASE, int),
    "factor": (ENV_FACTOR, float),
    "cap_seconds": (ENV_CAP, int),
    "jitter": (ENV_JITTER, float),
    "max_receive_count": (ENV_MAX_RECEIVE_COUNT, int),
    "retention_seconds": (ENV_RETENTION, int),
}
_RANGES: Final[dict[str, tuple[float, float]]] = {
    "base_seconds": (1, VISIBILITY_MAX),
    "factor": (1, 10),
    "cap_seconds": (1, VISIBILITY_MAX),
    "jitter": (0, 1),
    "max_receive_count": (limits.MAX_RECEIVE_COUNT_MIN, limits.MAX_RECEIVE_COUNT_MAX),
    "retention_seconds": (limits.RETENTION_MIN, limits.RETENTION_MAX),
}
_OPTIONAL: Final = frozenset({"max_receive_count", "retention_seconds"})


def _number(value: float) -> str:
    """A range bound as messages show it: 43,200, 0.5."""
    return f"{int(value):,}" if value == int(value) else f"{value:g}"


def _shown(text: str) -> str:
    """An environment value as an error message shows it: quoted, and cut when long."""
    shown = repr(text)
    return shown if len(shown) <= 40 else f"{shown[:37]}..."


def _range(name: str, value: object, low: float, high: float, *, whole: bool = False) -> list[str]:
    """``name`` is a number (a whole one if ``whole``) from ``low`` to ``high``, or why not."""
    kind_ok = isinstance(value, int) if whole else isinstance(value, (int, float))
    if isinstance(value, bool) or not kind_ok:
        kind = "a whole number" if whole else "a number"
        return [
            f"{name} must be {kind} from {_number(low)} to {_number(high)}, not {type(value).__name__} "
            f"{value!r}: pass {kind} in that range"
        ]
    assert isinstance(value, (int, float))
    if not low <= value <= high:  # NaN is outside too
        return [
            f"{name} is {value!r}, outside {_number(low)}-{_number(high)}: choose a value in that range"
        ]
    return []
