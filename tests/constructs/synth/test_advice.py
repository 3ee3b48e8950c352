"""Advice a user can act on: the DLQ expiry alarm of a dead-letter queue the user gave, the fixes
printed for its retention, and how messages name the resources the user passed."""

from __future__ import annotations

import re

import aws_cdk as cdk
import pytest
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Annotations, Match

from constructs_lib import ConfigurationError, ResilientQueue
from tests.constructs.conftest import FunctionFactory, resources_of_type, warnings_matching

DAY = 24 * 3600
S = cdk.Duration.seconds
IMPORTED_DLQ_ARN = "arn:aws:sqs:eu-west-1:111111111111:shared-dlq"
IMPORTED_FUNCTION_ARN = "arn:aws:lambda:eu-west-1:111111111111:function:worker"
# What a message must never show: a jsii or Python representation of an object.
REPRESENTATIONS = re.compile(r"jsii\.|Proxy|object at 0x|<aws_cdk|<constructs")


def age_alarms(stack: cdk.Stack) -> list[dict[str, object]]:
    return [
        alarm["Properties"]  # type: ignore[misc]
        for alarm in resources_of_type(stack, "AWS::CloudWatch::Alarm").values()
        if alarm["Properties"]["MetricName"] == "ApproximateAgeOfOldestMessage"  # type: ignore[index]
    ]


def imported_dlq(stack: cdk.Stack) -> sqs.IQueue:
    return sqs.Queue.from_queue_arn(stack, "SharedDlq", IMPORTED_DLQ_ARN)


# --- an imported dead-letter queue ---------------------------------------------------------------


def test_an_imported_dlq_of_unknown_retention_gets_no_expiry_alarm_but_a_warning(
    stack: cdk.Stack,
) -> None:
    queue = ResilientQueue(
        stack, "Orders", queue_name="orders", dead_letter_queue=imported_dlq(stack)
    )

    # Only the source's age alarm: no threshold can be derived for a retention nobody knows
    # (it was 60 s, paging a minute after any dead letter).
    [source_age] = age_alarms(stack)
    assert source_age["AlarmName"] == "orders-oldest-message-age"
    assert queue.alarms.dead_letter_expiry_risk is None
    assert len(list(queue.alarms)) == 3
    [warning] = warnings_matching(stack, "no DLQ expiry alarm")
    assert IMPORTED_DLQ_ARN in warning
    assert "Fix: pass the retention that queue has, e.g. dead_letter_retention_period=" in warning


def test_an_imported_dlq_with_its_retention_stated_gets_the_expiry_alarm(
    stack: cdk.Stack,
) -> None:
    queue = ResilientQueue(
        stack,
        "Orders",
        queue_name="orders",
        dead_letter_queue=imported_dlq(stack),
        dead_letter_retention_period=cdk.Duration.days(14),
    )

    assert queue.alarms.dead_letter_expiry_risk is not None
    dead_letter_age = next(
        a for a in age_alarms(stack) if a["AlarmName"] == "orders-dead-letter-age"
    )
    # standard: (14 d stated - 4 d source) / 2
    assert dead_letter_age["Threshold"] == 5 * DAY
    description = str(dead_letter_age["AlarmDescription"])
    assert (
        "waited 432000 s in the dead-letter queue of orders, half the time it has left"
        in description
    )
    assert not warnings_matching(stack, "no DLQ expiry alarm")


@pytest.mark.parametrize(
    ("stated", "threshold"),
    [
        pytest.param(4 * DAY - 1, None, id="below-source"),
        pytest.param(4 * DAY, None, id="at-source"),
        pytest.param(4 * DAY + 1, 60, id="just-above-source"),
        pytest.param(4 * DAY + 240, 120, id="four-minutes-above-source"),
    ],
)
def test_a_stated_retention_of_an_imported_dlq_is_judged_against_the_source(
    stack: cdk.Stack, stated: int, threshold: int | None
) -> None:
    arguments = {
        "dead_letter_queue": imported_dlq(stack),
        "dead_letter_retention_period": S(stated),
    }
    if threshold is None:
        with pytest.raises(ConfigurationError) as raised:
            ResilientQueue(stack, "Orders", queue_name="orders", **arguments)  # type: ignore[arg-type]
        message = str(raised.value)
        assert (
            f"{IMPORTED_DLQ_ARN} keeps messages {stated} s (dead_letter_retention_period, as "
            in message
        )
        assert "Fix: if that queue keeps messages longer, state it" in message
        return
    ResilientQueue(stack, "Orders", queue_name="orders", **arguments)  # type: ignore[arg-type]
    dead_letter_age = next(
        a for a in age_alarms(stack) if a["AlarmName"] == "orders-dead-letter-age"
    )
    assert dead_letter_age["Threshold"] == threshold
    if threshold == 60:  # one second left: the description does not claim "half"
        assert "may expire within minutes" in str(dead_letter_age["AlarmDescription"])


# --- a dead-letter queue the app defines ---------------------------------------------------------


def test_fails_for_an_in_app_dlq_of_default_retention_naming_its_own_retention(
    stack: cdk.Stack,
) -> None:
    mine = sqs.Queue(stack, "MyDlq")

    with pytest.raises(ConfigurationError) as raised:
        ResilientQueue(stack, "Orders", dead_letter_queue=mine)

    message = str(raised.value)
    [problem] = raised.value.problems
    assert problem.prop == "dead_letter_queue"
    assert (
        "queue MyDlq keeps messages 345600 s, SQS's default, as it sets no retention_period"
        in message
    )
    assert "this queue's retention_period (345600 s, SQS's default, as it is not set)" in message
    assert "Fix: give queue MyDlq a retention_period above 345600 s" in message
    # no fix the user cannot apply, no value the user never set
    assert "lengthen dead_letter_retention_period" not in message
    assert "retention_period=345600" not in message


def test_the_printed_fix_for_an_in_app_dlq_works(stack: cdk.Stack) -> None:
    mine = sqs.Queue(stack, "MyDlq", retention_period=cdk.Duration.days(14))
    queue = ResilientQueue(stack, "Orders", dead_letter_queue=mine)
    assert queue.dead_letter_retention == 14 * DAY


def test_fails_for_dead_letter_retention_period_with_an_in_app_dlq_saying_where_to_set_it(
    stack: cdk.Stack,
) -> None:
    mine = sqs.Queue(stack, "MyDlq", retention_period=cdk.Duration.days(14))

    with pytest.raises(ConfigurationError) as raised:
        ResilientQueue(
            stack,
            "Orders",
            dead_letter_queue=mine,
            dead_letter_retention_period=cdk.Duration.days(7),
        )

    message = str(raised.value)
    assert (
        "is read from the dead_letter_queue you gave, queue MyDlq, which keeps messages 1209600 s"
        in message
    )
    assert (
        "Fix: remove dead_letter_retention_period, and set retention_period on queue MyDlq"
        in message
    )
    assert "cannot be set together" not in message


@pytest.mark.parametrize(
    ("source", "dead_letter", "fixes"),
    [
        # the created DLQ is at its 14-day maximum: lengthening it is no fix
        pytest.param(14 * DAY, None, ["shorten retention_period below 1209600 s"], id="dlq-at-max"),
        pytest.param(
            10 * DAY,
            7 * DAY,
            [
                "shorten retention_period below 604800 s",
                "lengthen dead_letter_retention_period above 864000 s",
            ],
            id="dlq-below-max",
        ),
    ],
)
def test_the_retention_order_fix_offers_only_what_can_be_done(
    stack: cdk.Stack, source: int, dead_letter: int | None, fixes: list[str]
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        ResilientQueue(
            stack,
            "Orders",
            retention_period=S(source),
            dead_letter_retention_period=None if dead_letter is None else S(dead_letter),
        )
    fix = str(raised.value).split("Fix: ", 1)[1]
    for expected in fixes:
        assert expected in fix
    assert ("lengthen" in fix) is (len(fixes) == 2)


# --- no object representation in any message ---------------------------------------------------


def _misuse_messages(make_function: FunctionFactory) -> list[str]:
    """The errors and annotations of representative misuse: imported and in-app DLQs, keys and
    functions where the user passed them."""
    messages: list[str] = []
    app = cdk.App()
    stack = cdk.Stack(app, "Misuse")
    imported_key = kms.Key.from_key_arn(
        stack,
        "ImportedKey",
        "arn:aws:kms:eu-west-1:111111111111:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    )
    imported_function = lambda_.Function.from_function_arn(stack, "Imported", IMPORTED_FUNCTION_ARN)
    fifo_dlq = sqs.Queue.from_queue_arn(stack, "FifoDlq", f"{IMPORTED_DLQ_ARN}.fifo")

    def attempt(build: object) -> None:
        try:
            build()  # type: ignore[operator]
        except (ConfigurationError, TypeError) as error:
            messages.append(str(error))

    attempt(lambda: ResilientQueue(stack, "WrongType", dead_letter_queue=fifo_dlq))
    attempt(lambda: ResilientQueue(stack, "ShortDlq", dead_letter_queue=sqs.Queue(stack, "Short")))
    attempt(lambda: ResilientQueue(stack, "BadKey", encryption_key="alias/mine"))  # type: ignore[arg-type]
    shared = ResilientQueue(
        stack,
        "Shared",
        dead_letter_queue=sqs.Queue.from_queue_arn(stack, "Dlq", IMPORTED_DLQ_ARN),
        encryption_key=imported_key,
    )
    attempt(lambda: shared.add_lambda_consumer(imported_function))
    attempt(lambda: shared.add_dead_letter_consumer(imported_function, function_timeout=S(10)))
    worker = make_function(scope=stack)
    plain = ResilientQueue(stack, "Plain", max_receive_count=2)
    plain.add_lambda_consumer(
        worker,
        visibility_timeout_factor=5,
        filters=[lambda_.FilterCriteria.filter({"body": {"a": [1]}})],
    )
    attempt(lambda: plain.add_lambda_consumer(worker))
    other = cdk.Stack(
        app, "Elsewhere", env=cdk.Environment(account="222222222222", region="eu-west-1")
    )
    here = cdk.Stack(app, "Here", env=cdk.Environment(account="111111111111", region="eu-west-1"))
    attempt(lambda: ResilientQueue(here, "Far").add_lambda_consumer(make_function(scope=other)))
    for scope in (stack, here):
        for kind in ("warning", "info", "error"):
            finder = getattr(Annotations.from_stack(scope), f"find_{kind}")
            messages += [str(m.entry.data) for m in finder("*", Match.any_value())]
    return messages


def test_messages_never_show_an_object_representation(make_function: FunctionFactory) -> None:
    messages = _misuse_messages(make_function)

    assert len(messages) >= 8  # the cases above did produce their messages
    assert any(IMPORTED_DLQ_ARN in m for m in messages)
    assert any(IMPORTED_FUNCTION_ARN in m for m in messages)
    shown = [m for m in messages if REPRESENTATIONS.search(m)]
    assert shown == []
