"""The alarms of a ResilientQueue: each alarm's metric and behaviour (``alarm``), the alarms a
queue gets (``factory``), their tiers and composite alarm (``tiers``), and the signals beyond
failures (``signals``)."""

from constructs_lib.alarms.alarm import AlarmSpec, QueueAlarms, Tier

__all__ = ["AlarmSpec", "QueueAlarms", "Tier"]
