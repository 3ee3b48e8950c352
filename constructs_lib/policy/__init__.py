"""Pure decisions about SQS -> Lambda settings, shared by the constructs, the in-app checks and
the fleet audit. No CDK, no Spark: plain numbers in, numbers or problems out.

One module per concern: queue names (``queue_names``), the visibility timeout (``visibility``),
the path of a failing message to the dead-letter queue (``dead_letters``), event source settings
(``event_sources``), alarm thresholds (``alarm_thresholds``), encryption keys (``encryption``),
retries with backoff (``backoff``), and the terms of a suppression (``suppression_terms``).

A value of ``None`` means "not known here" (an unresolved token or reference): checks that need
it are skipped, and the caller says so (a warning annotation, or an audit QR900 finding).
"""

from constructs_lib.policy.alarm_thresholds import (
    default_in_flight_threshold,
    expiry_alarm_thresholds,
    in_flight_threshold,
)
from constructs_lib.policy.backoff import backoff_expiry_problems
from constructs_lib.policy.dead_letters import (
    expiry_before_dead_letter_problems,
    lambda_receive_count_problems,
    max_receive_count_problems,
    message_size_problems,
    retention_order_problems,
    retention_problems,
)
from constructs_lib.policy.encryption import is_aws_managed_sqs_key
from constructs_lib.policy.event_sources import (
    batch_payload_problems,
    batching_problems,
    concurrency_ceiling,
    event_source_problems,
    provisioned_poller_problems,
    reserved_concurrency_problems,
)
from constructs_lib.policy.queue_names import (
    DEAD_LETTER_SUFFIX,
    dead_letter_queue_name,
    queue_name_problems,
    strip_fifo_suffix,
)
from constructs_lib.policy.visibility import (
    derived_visibility_timeout,
    function_timeout_problems,
    visibility_factor_problems,
    visibility_problems,
)

__all__ = [
    "DEAD_LETTER_SUFFIX",
    "backoff_expiry_problems",
    "batch_payload_problems",
    "batching_problems",
    "concurrency_ceiling",
    "dead_letter_queue_name",
    "default_in_flight_threshold",
    "derived_visibility_timeout",
    "event_source_problems",
    "expiry_alarm_thresholds",
    "expiry_before_dead_letter_problems",
    "function_timeout_problems",
    "in_flight_threshold",
    "is_aws_managed_sqs_key",
    "lambda_receive_count_problems",
    "max_receive_count_problems",
    "message_size_problems",
    "provisioned_poller_problems",
    "queue_name_problems",
    "reserved_concurrency_problems",
    "retention_order_problems",
    "retention_problems",
    "strip_fifo_suffix",
    "visibility_factor_problems",
    "visibility_problems",
]
