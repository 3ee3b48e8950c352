"""Messages through the deployed queues: redrive to the DLQ, FIFO order, visibility timeouts.

The consumer is played with boto3 (the emulator cannot run Lambda functions); the deployed event
source mappings are disabled for that reason (see the ``deployment`` fixture). Counts come from
each message's ApproximateReceiveCount, not from counting our own calls.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from constructs_lib.policy.visibility import derived_visibility_timeout

from .app_spec import EVENTS, LEDGER, ORDERS, QUEUES, QueueSpec
from .deployment import Deployment
from .messages import Received, depth, drain, receive, release, send

pytestmark = pytest.mark.e2e
ATTRIBUTES = {
    "kind": {"DataType": "String", "StringValue": "poison"},
    "attempt": {"DataType": "Number", "StringValue": "42"},
    "payload": {"DataType": "Binary", "BinaryValue": b"\x00\x01\xfe\xff"},
}


@pytest.fixture
def sqs(client_factory: Any) -> Any:
    return client_factory("sqs")


def urls(deployment: Deployment, spec: QueueSpec) -> tuple[str, str]:
    queue = deployment.queues[spec.construct_id]
    return queue.queue_url, queue.dead_letter_queue_url


@pytest.mark.parametrize("spec", QUEUES, ids=lambda spec: spec.construct_id)
def test_poison_message_moves_to_the_dlq_after_exactly_max_receive_count_receives(
    deployment: Deployment, sqs: Any, spec: QueueSpec
) -> None:
    source, dead_letter = urls(deployment, spec)
    body = f'{{"order": "{spec.construct_id}-poison", "note": "Ünïcode ✓"}}'
    group = "poison" if spec.fifo else None
    sent_id = send(sqs, source, body, ATTRIBUTES, group)
    seen: list[int] = []

    for _ in range(spec.max_receive_count + 3):  # bounded: a few more tries than allowed
        batch = receive(sqs, source, wait=1)
        if not batch:
            break
        (message,) = batch
        seen.append(message.receive_count)
        if message.receive_count < spec.max_receive_count:
            assert depth(sqs, dead_letter) == 0, "moved to the DLQ too early"
        release(sqs, source, message)  # fails: not deleted

    assert seen == list(range(1, spec.max_receive_count + 1))
    assert depth(sqs, source) == 0
    (dead,) = drain(sqs, dead_letter, expected=1)
    assert dead.message_id == sent_id
    assert dead.body == body
    assert dead.attributes == {
        "kind": {"DataType": "String", "StringValue": "poison"},
        "attempt": {"DataType": "Number", "StringValue": "42"},
        "payload": {"DataType": "Binary", "BinaryValue": b"\x00\x01\xfe\xff"},
    }
    assert dead.group_id == group


def test_fifo_dead_letters_keep_their_order_and_later_groups_are_not_lost(
    deployment: Deployment, sqs: Any
) -> None:
    spec = LEDGER
    source, dead_letter = urls(deployment, spec)
    poison = [f"poison-{i}" for i in range(5)]
    good = {f"good-{g}": [f"good-{g}-{i}" for i in range(6)] for g in range(4)}
    for i in range(6):  # interleave the groups; the poison group is sent before the last ones
        if i < len(poison):
            send(sqs, source, poison[i], group="poison")
        for group, bodies in good.items():
            send(sqs, source, bodies[i], group=group)
    late = [f"late-{i}" for i in range(4)]
    for body in late:
        send(sqs, source, body, group="late")
    good["late"] = late
    processed: dict[str, list[str]] = {group: [] for group in good}
    receives_before_move: dict[str, int] = {}
    deadline = time.monotonic() + 60

    while time.monotonic() < deadline and depth(sqs, source) > 0:
        failed_groups: set[str] = set()
        batch = receive(sqs, source, wait=1)
        for message in batch:  # a Lambda batch: in order, a failure blocks the rest of its group
            assert message.group_id is not None
            if message.body.startswith("poison") or message.group_id in failed_groups:
                failed_groups.add(message.group_id)
                receives_before_move[message.body] = message.receive_count
                release(sqs, source, message)
            else:
                processed[message.group_id].append(message.body)
                sqs.delete_message(QueueUrl=source, ReceiptHandle=message.receipt_handle)

    dead = drain(sqs, dead_letter, expected=len(poison))
    assert [m.body for m in dead] == poison
    assert receives_before_move == dict.fromkeys(poison, spec.max_receive_count)
    assert processed == good
    assert depth(sqs, source) == 0


@pytest.mark.parametrize("spec", [EVENTS, ORDERS], ids=lambda spec: spec.construct_id)
def test_message_of_a_crashed_consumer_returns_only_after_the_visibility_timeout(
    deployment: Deployment, sqs: Any, spec: QueueSpec
) -> None:
    source, _ = urls(deployment, spec)
    visibility = derived_visibility_timeout(spec.function_timeout, spec.batching_window or 0)
    send(sqs, source, f"crash-{spec.construct_id}", group="crash" if spec.fifo else None)
    started = time.monotonic()
    (first,) = receive(sqs, source, wait=1)
    received_at = time.monotonic()
    # The consumer crashes here: no delete, no visibility change.
    again: Received | None = None

    while again is None and time.monotonic() - started < visibility + 8:
        batch = receive(sqs, source)
        if batch:
            (again,) = batch
            break
        time.sleep(0.2)
    returned_after = time.monotonic() - received_at

    assert again is not None, f"not redelivered within {visibility + 8} s"
    assert again.message_id == first.message_id
    assert again.receive_count == 2
    assert returned_after >= visibility - 0.5, f"back after {returned_after:.1f} s"
    assert returned_after <= visibility + 3, f"back after {returned_after:.1f} s"
    sqs.delete_message(QueueUrl=source, ReceiptHandle=again.receipt_handle)
    assert depth(sqs, source) == 0
