"""The typed settings of the public calls (``constructs_lib.params.settings``): one frozen
dataclass per call, built once from the checked arguments, with a field for every parameter its
table declares; the construct's collaborators read them by attribute."""

from __future__ import annotations

import dataclasses

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_

from constructs_lib.params import prop_tables
from constructs_lib.params import settings as call_settings
from constructs_lib.params.table import Table

# Parameters that place the construct rather than configure it, or that the settings hold in the
# units the checks read (``expected_traffic_seconds``).
NOT_FIELDS = {"scope", "construct_id", "expected_traffic"}


def field_names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


@pytest.mark.parametrize(
    ("table", "cls"),
    [
        (prop_tables.QUEUE, call_settings.QueueSettings),
        (prop_tables.CONSUMER, call_settings.ConsumerCall),
        (prop_tables.DEAD_LETTER_CONSUMER, call_settings.ConsumerCall),
        (prop_tables.PRODUCER, call_settings.ProducerCall),
    ],
    ids=["queue", "consumer", "dead-letter-consumer", "producer"],
)
def test_every_declared_parameter_is_a_field(table: Table, cls: type) -> None:
    assert set(table.names) - NOT_FIELDS <= field_names(cls)


def _function(stack: cdk.Stack) -> lambda_.Function:
    return lambda_.Function(
        stack,
        "Consumer",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context): pass"),
        timeout=cdk.Duration.seconds(30),
    )


def test_a_dead_letter_consumer_call_is_read_with_the_defaults_it_lacks() -> None:
    stack = cdk.Stack(cdk.App(), "SettingsStack")
    arguments = {
        "function": _function(stack),
        "batch_size": 10,
        "max_batching_window": cdk.Duration.seconds(5),
        "max_concurrency": None,
        "report_batch_item_failures": True,
        "visibility_timeout_factor": 6.0,
        "function_timeout": None,
        "event_source_metrics": True,
        "provisioned_pollers": None,
    }
    call = call_settings.consumer_call(
        prop_tables.DEAD_LETTER_CONSUMER, lambda: "SettingsStack/Orders", arguments, False
    )
    assert (call.enabled, call.filters, call.retry_backoff) == (True, None, None)
    assert (call.window_seconds, call.known_batch_size, call.known_factor) == (5, 10, 6.0)
    assert call.problems == () and call.unresolved == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.batch_size = 1  # type: ignore[misc]
