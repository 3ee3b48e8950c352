"""Retry backoff: the schedule, its settings and the caps a failed record's wait obeys.

Everything here runs without SQS: the schedule is pure, and a batch whose records all succeed
changes no visibility. The visibility changes themselves are checked against the emulator in
``tests/e2e/test_retry_backoff.py``.
"""

from __future__ import annotations

import logging
import math
import random
import subprocess
import sys
from typing import Any

import pytest

from constructs_lib import backoff_batch
from constructs_lib.backoff import (
    ENV_BASE,
    ENV_CAP,
    ENV_FACTOR,
    ENV_JITTER,
    ENV_MAX_RECEIVE_COUNT,
    ENV_RETENTION,
    VISIBILITY_MAX,
    Backoff,
    BackoffError,
)
from constructs_lib.backoff_batch import (
    EXPIRY_MARGIN,
    WAIT_MAX,
    BatchEventError,
    plan_waits,
    process_batch,
    queue_url,
    sqs_records,
    wait_after_failure,
)
from tests.support.sqs_events import made_up, queue_arn

NOW = 1_800_000_000.0  # a fixed "now" (2027-01-15), seconds since the epoch
FIFO = queue_arn("payments.fifo")


# --- the schedule ---------------------------------------------------------------------------


def test_first_receive_waits_the_base_and_each_later_one_factor_times_longer() -> None:
    backoff = Backoff(base_seconds=10, factor=2, cap_seconds=900, jitter=0)
    assert [backoff.ceiling(n) for n in range(1, 9)] == [10, 20, 40, 80, 160, 320, 640, 900]
    assert backoff.ceiling(0) == 10  # a count below 1 reads as the first receive


def test_the_cap_holds_from_the_receive_that_reaches_it_on() -> None:
    backoff = Backoff(base_seconds=3, factor=3, cap_seconds=100, jitter=0)
    assert [backoff.ceiling(n) for n in range(1, 7)] == [3, 9, 27, 81, 100, 100]
    # No float overflow at the far end: 10 ** 999 is no float.
    assert Backoff(factor=10, cap_seconds=VISIBILITY_MAX).ceiling(1_000) == VISIBILITY_MAX


def test_last_receive_waits_nothing_so_the_next_receive_dead_letters() -> None:
    backoff = Backoff(base_seconds=1, factor=2, jitter=1, max_receive_count=3)
    assert [backoff.ceiling(n) for n in (1, 2, 3, 4)] == [1, 2, 0, 0]
    assert backoff.delay(3, random.Random(1)) == 0
    assert Backoff(max_receive_count=1).ceiling(1) == 0
    assert Backoff().ceiling(1_000) == 900  # no limit known: every failure waits


def test_factor_one_is_a_constant_wait() -> None:
    backoff = Backoff(base_seconds=30, factor=1, cap_seconds=30, jitter=0)
    assert {backoff.ceiling(n) for n in range(1, 50)} == {30}


def test_jitter_zero_is_the_ceiling_and_jitter_one_anywhere_up_to_it() -> None:
    steady = Backoff(base_seconds=8, jitter=0)
    assert [steady.delay(n, random.Random(7)) for n in (1, 2, 3)] == [8, 16, 32]
    full = Backoff(base_seconds=100, cap_seconds=100, jitter=1)
    draws = [full.delay(1, random.Random(seed)) for seed in range(200)]
    assert all(1 <= d <= 100 for d in draws)
    assert min(draws) < 10 and max(draws) > 90  # spread over the whole range


def test_a_seeded_random_gives_the_documented_draw() -> None:
    backoff = Backoff(base_seconds=100, cap_seconds=1_000, jitter=0.5)
    draw = random.Random(42).random()
    expected = math.ceil(200 * (1 - 0.5 * draw))
    assert backoff.delay(2, random.Random(42)) == expected
    assert backoff.delay(2, random.Random(42)) == backoff.delay(2, random.Random(42))
    assert all(100 <= backoff.delay(2, random.Random(s)) <= 200 for s in range(100))


def test_worst_case_counts_each_receive_at_its_longer_hold() -> None:
    backoff = Backoff(base_seconds=10, factor=2, cap_seconds=900, jitter=0.5, max_receive_count=4)
    # receives 1-3 wait 10, 20, 40 after up to 30 s of function; the 4th waits 0; the queue's
    # visibility timeout (60) applies when longer.
    assert backoff.worst_case_seconds(visibility_timeout=60, function_timeout=30) == (
        max(60, 40) + max(60, 50) + max(60, 70) + max(60, 30)
    )
    with pytest.raises(BackoffError, match="max_receive_count, which is None: set it"):
        Backoff().worst_case_seconds(60, 30)


# --- settings and the environment -----------------------------------------------------------


def test_environment_round_trip() -> None:
    settings = [
        Backoff(),
        Backoff(1, 1.0, 1, 0.0),
        Backoff(7, 1.5, 43_200, 1.0, max_receive_count=1_000, retention_seconds=1_209_600),
        Backoff(base_seconds=2, factor=3.3, cap_seconds=77, jitter=0.25, max_receive_count=5),
    ]
    for backoff in settings:
        assert Backoff.from_environment(backoff.to_environment()) == backoff
    assert set(settings[2].to_environment()) == {
        ENV_BASE,
        ENV_FACTOR,
        ENV_CAP,
        ENV_JITTER,
        ENV_MAX_RECEIVE_COUNT,
        ENV_RETENTION,
    }


def test_absent_or_blank_variables_take_the_defaults() -> None:
    assert Backoff.from_environment({}) == Backoff()
    assert Backoff.from_environment({ENV_BASE: "", ENV_JITTER: "  "}) == Backoff()
    assert Backoff.from_environment({"PATH": "/bin", ENV_CAP: " 60 "}) == Backoff(cap_seconds=60)


BAD_SETTINGS = [
    ({"base_seconds": 0}, "base_seconds is 0, outside 1-43,200: choose a value in that range"),
    ({"base_seconds": 43_201}, "base_seconds is 43201, outside 1-43,200"),
    ({"base_seconds": 1.5}, "base_seconds must be a whole number from 1 to 43,200, not float"),
    ({"base_seconds": True}, "base_seconds must be a whole number from 1 to 43,200, not bool"),
    ({"factor": 0.5}, "factor is 0.5, outside 1-10: choose a value in that range"),
    ({"factor": 11}, "factor is 11, outside 1-10"),
    ({"factor": math.nan}, "factor is nan, outside 1-10"),
    ({"factor": "2"}, "factor must be a number from 1 to 10, not str '2': pass a number"),
    ({"cap_seconds": 43_201}, "cap_seconds is 43201, outside 1-43,200"),
    ({"base_seconds": 60, "cap_seconds": 30}, "cap_seconds 30 is below base_seconds 60: raise"),
    ({"jitter": -0.1}, "jitter is -0.1, outside 0-1: choose"),
    ({"jitter": math.inf}, "jitter is inf, outside 0-1"),
    ({"max_receive_count": 0}, "max_receive_count is 0, outside 1-1,000: choose"),
    ({"max_receive_count": 1_001}, "max_receive_count is 1001, outside 1-1,000"),
    ({"retention_seconds": 59}, "retention_seconds is 59, outside 60-1,209,600: choose"),
    ({"retention_seconds": 1_209_601}, "retention_seconds is 1209601, outside 60-1,209,600"),
]


@pytest.mark.parametrize(("settings", "message"), BAD_SETTINGS, ids=lambda v: str(v)[:40])
def test_every_bad_setting_names_the_value_the_range_and_the_fix(
    settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(BackoffError) as raised:
        Backoff(**settings)
    assert message in str(raised.value)


def test_several_bad_settings_are_named_together() -> None:
    with pytest.raises(BackoffError) as raised:
        Backoff(base_seconds=0, jitter=2)
    assert "base_seconds is 0" in str(raised.value) and "jitter is 2" in str(raised.value)


HOSTILE = [
    (ENV_BASE, "ten", "a whole number from 1 to 43,200"),
    (ENV_BASE, "1e3", "a whole number from 1 to 43,200"),
    (ENV_BASE, "0x10", "a whole number from 1 to 43,200"),
    (ENV_BASE, "10; rm -rf /", "a whole number from 1 to 43,200"),
    (ENV_BASE, "9" * 5_000, "a whole number from 1 to 43,200"),  # past int()'s digit limit
    (ENV_CAP, "\x00", "a whole number from 1 to 43,200"),
    (ENV_FACTOR, "two", "a number from 1 to 10"),
    (ENV_JITTER, "50%", "a number from 0 to 1"),
    (ENV_MAX_RECEIVE_COUNT, "5.0", "a whole number from 1 to 1,000"),
    (ENV_RETENTION, "4 days", "a whole number from 60 to 1,209,600"),
]


@pytest.mark.parametrize(("name", "text", "expected"), HOSTILE, ids=lambda v: str(v)[:20])
def test_a_variable_that_is_no_number_names_itself_its_range_and_the_fix(
    name: str, text: str, expected: str
) -> None:
    with pytest.raises(BackoffError) as raised:
        Backoff.from_environment({name: text})
    message = str(raised.value)
    assert message.startswith(f"environment variable {name}=")
    assert f"is not {expected}: set it to one, or remove it for the default" in message
    assert len(message) < 300  # a long value is cut, not echoed whole


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (ENV_FACTOR, "nan", "factor is nan, outside 1-10"),
        (ENV_FACTOR, "inf", "factor is inf, outside 1-10"),
        (ENV_JITTER, "-1", "jitter is -1.0, outside 0-1"),
        (ENV_BASE, "-5", "base_seconds is -5, outside 1-43,200"),
        (ENV_MAX_RECEIVE_COUNT, "0", "max_receive_count is 0, outside 1-1,000"),
    ],
)
def test_a_number_out_of_range_names_the_variable_and_the_range(
    name: str, text: str, expected: str
) -> None:
    with pytest.raises(BackoffError) as raised:
        Backoff.from_environment({name: text})
    assert f"environment variables {name}=" in str(raised.value)
    assert expected in str(raised.value)


# --- the caps on one record's wait ----------------------------------------------------------


def test_no_wait_reaches_sqs_s_12_hours_from_the_receive() -> None:
    backoff = Backoff(base_seconds=VISIBILITY_MAX, cap_seconds=VISIBILITY_MAX, jitter=0)
    record = made_up("m1", receive_count=4, sent_at=NOW)
    assert wait_after_failure(record, backoff, NOW) == WAIT_MAX == VISIBILITY_MAX - 1_200


def test_a_wait_ends_the_margin_before_the_message_expires() -> None:
    backoff = Backoff(base_seconds=600, cap_seconds=600, jitter=0, retention_seconds=3_600)
    fresh = made_up("m1", sent_at=NOW - 60)
    assert wait_after_failure(fresh, backoff, NOW) == 600
    # 800 s left: visible again EXPIRY_MARGIN before the end, not after the full 600.
    late = made_up("m2", sent_at=NOW - 2_800)
    assert wait_after_failure(late, backoff, NOW) == 800 - EXPIRY_MARGIN
    # Inside the margin, or past the expiry: visible at once.
    assert wait_after_failure(made_up("m3", sent_at=NOW - 3_400), backoff, NOW) == 0
    assert wait_after_failure(made_up("m4", sent_at=NOW - 9_999), backoff, NOW) == 0


def test_the_last_receive_waits_nothing_whatever_the_clock() -> None:
    backoff = Backoff(base_seconds=5, jitter=0, max_receive_count=3, retention_seconds=86_400)
    assert wait_after_failure(made_up("m1", receive_count=3, sent_at=NOW), backoff, NOW) == 0


# --- which records wait how long ------------------------------------------------------------


def test_standard_queue_records_each_wait_their_own_backoff() -> None:
    backoff = Backoff(base_seconds=10, jitter=0)
    # A fair (standard) queue's records carry a MessageGroupId too: no group rule applies there.
    records = [
        made_up("a", receive_count=1, sent_at=NOW, group="tenant-1"),
        made_up("b", receive_count=3, sent_at=NOW, group="tenant-1"),
        made_up("c", receive_count=2, sent_at=NOW),
    ]
    assert plan_waits(records, {"a", "b", "c"}, set(), backoff, NOW) == {"a": 10, "b": 40, "c": 20}
    assert plan_waits(records, {"c"}, set(), backoff, NOW) == {"c": 20}


def test_fifo_group_of_the_failure_waits_with_it_and_other_groups_come_back_at_once() -> None:
    backoff = Backoff(base_seconds=10, jitter=0)
    records = [
        made_up("ok", arn=FIFO, group="g1", sent_at=NOW),
        made_up("fail", arn=FIFO, group="g1", receive_count=2, sent_at=NOW),
        made_up("g1-later", arn=FIFO, group="g1", sent_at=NOW),
        made_up("g2-later", arn=FIFO, group="g2", receive_count=3, sent_at=NOW),
        made_up("g1-last", arn=FIFO, group="g1", sent_at=NOW),
    ]
    skipped = {"g1-later", "g2-later", "g1-last"}
    assert plan_waits(records, {"fail"}, skipped, backoff, NOW) == {
        "fail": 20,
        "g1-later": 20,
        "g2-later": 0,
        "g1-last": 20,
    }
    # What apply_backoff plans from a response, which names them all as failed: the first of each
    # group waits its own backoff, the rest of the group with it.
    assert plan_waits(records, {"fail", *skipped}, set(), backoff, NOW) == {
        "fail": 20,
        "g1-later": 20,
        "g2-later": 40,
        "g1-last": 20,
    }


# --- queue URLs and the event ---------------------------------------------------------------


def test_queue_url_is_the_documented_form_in_each_partition() -> None:
    assert (
        queue_url("arn:aws:sqs:eu-west-1:111122223333:orders")
        == "https://sqs.eu-west-1.amazonaws.com/111122223333/orders"
    )
    assert (
        queue_url("arn:aws-cn:sqs:cn-north-1:111122223333:a.fifo")
        == "https://sqs.cn-north-1.amazonaws.com.cn/111122223333/a.fifo"
    )
    assert (
        queue_url("arn:aws-us-gov:sqs:us-gov-west-1:111122223333:q")
        == "https://sqs.us-gov-west-1.amazonaws.com/111122223333/q"
    )
    with pytest.raises(BatchEventError, match="partition 'aws-mars' is unknown"):
        queue_url("arn:aws-mars:sqs:mars-1:111122223333:q")


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:sns:us-east-1:111122223333:topic",
        "arn:aws:sqs:us-east-1:111122223333",
        "arn:aws:sqs::111122223333:q",
        "https://sqs.us-east-1.amazonaws.com/111122223333/q",
    ],
)
def test_an_event_source_arn_that_is_no_queue_arn_is_named(arn: str) -> None:
    with pytest.raises(BatchEventError) as raised:
        sqs_records({"Records": [made_up("m1", arn=queue_arn("q")) | {"eventSourceARN": arn}]})
    assert f"eventSourceARN {arn!r} is not an SQS queue ARN" in str(raised.value)


def without(record: dict[str, Any], *path: str) -> dict[str, Any]:
    copy = {**record, "attributes": dict(record["attributes"])}
    if len(path) == 1:
        del copy[path[0]]
    else:
        del copy["attributes"][path[1]]
    return copy


FIX = "pass the event exactly as Lambda hands it to a function whose event source mapping reads"


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({"records": []}, "the event has no 'Records' list"),
        ([], "the event has no 'Records' list"),
        ({"Records": ["m1"]}, "record 0 is str, not an object"),
        (
            {"Records": [{"eventSource": "aws:kinesis", "kinesis": {}}]},
            "record 0 has eventSource 'aws:kinesis', not 'aws:sqs'",
        ),
        (
            {"Records": [{"EventSource": "aws:sns", "Sns": {}}]},
            "record 0 has eventSource None, not 'aws:sqs'",
        ),
        (
            {"Records": [made_up("m0"), without(made_up("m1"), "receiptHandle")]},
            "record 1 (messageId 'm1') has no receiptHandle",
        ),
        (
            {"Records": [without(made_up("m1"), "eventSourceARN")]},
            "record 0 (messageId 'm1') has no eventSourceARN",
        ),
        (
            {"Records": [without(made_up("m1"), "messageId")]},
            "record 0 (messageId None) has no messageId",
        ),
        (
            {"Records": [without(made_up("m1"), "attributes", "ApproximateReceiveCount")]},
            "has no attributes.ApproximateReceiveCount (a whole number)",
        ),
        (
            {"Records": [without(made_up("m1"), "attributes", "SentTimestamp")]},
            "has no attributes.SentTimestamp (a whole number)",
        ),
    ],
)
def test_bad_input_names_what_is_missing_and_the_fix(event: Any, message: str) -> None:
    handled: list[str] = []
    with pytest.raises(BatchEventError) as raised:
        process_batch(event, lambda r: handled.append(r["messageId"]), backoff=Backoff())
    assert message in str(raised.value)
    assert FIX in str(raised.value)
    assert handled == []  # checked before any record is processed


def test_apply_backoff_needs_a_partial_batch_response() -> None:
    event = {"Records": [made_up("m1")]}
    with pytest.raises(BatchEventError, match="no batchItemFailures list"):
        backoff_batch.apply_backoff(event, {"items": []}, backoff=Backoff())


def test_a_good_batch_reports_nothing_and_changes_no_visibility(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handled: list[str] = []
    event = {"Records": [made_up("m1"), made_up("m2")]}
    unusable_client = object()  # any call on it would fail and be logged
    with caplog.at_level(logging.DEBUG, logger="constructs_lib"):
        response = process_batch(
            event, lambda r: handled.append(r["messageId"]), sqs_client=unusable_client
        )
    assert response == {"batchItemFailures": []}
    assert handled == ["m1", "m2"]
    assert caplog.records == []


def test_bad_settings_in_the_environment_stop_the_batch_before_any_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENV_BASE, "soon")
    handled: list[str] = []
    with pytest.raises(BackoffError, match=f"environment variable {ENV_BASE}='soon'"):
        process_batch({"Records": [made_up("m1")]}, lambda r: handled.append(r["messageId"]))
    assert handled == []


# --- what a function can import -------------------------------------------------------------


def test_the_runtime_modules_load_no_cdk() -> None:
    """The Lambda Python runtime has boto3, not aws-cdk-lib, jsii or constructs."""
    statement = (
        "import constructs_lib.backoff, constructs_lib.backoff_batch, constructs_lib.time_budget"
    )
    completed = subprocess.run(
        [sys.executable, "-c", f"{statement}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = set(completed.stdout.split())
    assert {
        "constructs_lib.backoff",
        "constructs_lib.backoff_batch",
        "constructs_lib.time_budget",
    } <= loaded
    assert not {"aws_cdk", "jsii", "constructs"} & loaded
    assert not {name for name in loaded if name.startswith(("aws_cdk.", "jsii.", "constructs."))}
    assert "boto3" not in loaded  # imported when a visibility is first changed


def test_a_queue_url_that_cannot_be_made_still_reports_the_record(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """No SQS call is made: the failure comes before it, and the record is reported anyway."""
    record = made_up("m1", arn="arn:aws-mars:sqs:mars-1:111122223333:orders")

    def down(_: Any) -> None:
        raise RuntimeError("downstream is down")

    with caplog.at_level(logging.WARNING, logger="constructs_lib.backoff_batch"):
        response = process_batch(
            {"Records": [record]}, down, backoff=Backoff(), sqs_client=object()
        )

    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert [r.getMessage() for r in caplog.records] == [
        "message m1 failed: RuntimeError: downstream is down",
        "backoff not set for message m1: ChangeMessageVisibility failed with BatchEventError; it "
        "is reported failed and returns after the queue's visibility timeout",
    ]
