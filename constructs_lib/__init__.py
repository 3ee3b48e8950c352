"""SQS -> Lambda constructs that cannot be misconfigured, and the rules behind them."""

from importlib.metadata import version

from constructs_lib.alarms import QueueAlarms
from constructs_lib.consumer import ConsumerSettings, LambdaConsumer
from constructs_lib.errors import ConfigurationError, Problem
from constructs_lib.queue import ResilientQueue

__all__ = [
    "ConfigurationError",
    "ConsumerSettings",
    "LambdaConsumer",
    "Problem",
    "QueueAlarms",
    "ResilientQueue",
]
__version__ = version("constructs-lib")
