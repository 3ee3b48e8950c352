"""SQS -> Lambda constructs that cannot be misconfigured, and the rules behind them."""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from constructs_lib.errors import ConfigurationError, ParameterTypeError, Problem

if TYPE_CHECKING:
    from constructs_lib.adoption import ExistingQueues
    from constructs_lib.alarms import QueueAlarms
    from constructs_lib.consumer import ConsumerSettings, LambdaConsumer
    from constructs_lib.queue import ResilientQueue
    from constructs_lib.queue.payloads import LargePayloads
    from constructs_lib.retry_backoff import RetryBackoff

# Importing aws-cdk-lib starts a Node.js process. The audit imports this package in every Spark
# worker and never needs a construct, so the construct classes load on first use.
_LAZY_EXPORTS = {
    "ExistingQueues": "constructs_lib.adoption",
    "QueueAlarms": "constructs_lib.alarms",
    "ConsumerSettings": "constructs_lib.consumer",
    "LambdaConsumer": "constructs_lib.consumer",
    "LargePayloads": "constructs_lib.queue.payloads",
    "ResilientQueue": "constructs_lib.queue",
    "RetryBackoff": "constructs_lib.retry_backoff",
}

__all__ = [
    "ConfigurationError",
    "ConsumerSettings",
    "ExistingQueues",
    "LambdaConsumer",
    "LargePayloads",
    "ParameterTypeError",
    "Problem",
    "QueueAlarms",
    "ResilientQueue",
    "RetryBackoff",
]
try:
    __version__ = version("constructs-lib")
except PackageNotFoundError:  # imported from the archive a Spark job ships to its executors
    __version__ = "unknown"


def __getattr__(name: str) -> Any:
    module = _LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)
