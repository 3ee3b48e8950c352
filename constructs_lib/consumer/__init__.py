"""The Lambda side of a ResilientQueue: the event source (``event_source``), the consumers of each
queue (``consumers``), a consumer's retry backoff layer (``backoff_layer``), and event source
mappings made around the construct (``bypass``)."""

from constructs_lib.consumer.event_source import ConsumerSettings, LambdaConsumer

__all__ = ["ConsumerSettings", "LambdaConsumer"]
