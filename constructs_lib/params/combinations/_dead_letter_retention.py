"""The dead-letter queue's retention, created, defined in the app or imported, against the
source's: a standard source must keep messages for less time than its DLQ, and each fix offered
is one the user can apply."""

from __future__ import annotations

from aws_cdk import Duration, Token
from aws_cdk import aws_sqs as sqs

from constructs_lib import limits
from constructs_lib.errors import Problem
from constructs_lib.queue import naming


def dead_letter_retention_and_problems(
    fifo: bool,
    source: int | None,
    source_set: bool,
    dead_letter_queue: sqs.IQueue | None,
    stated: Duration | None,
    stated_seconds: int | None,
) -> tuple[list[Problem], int | None]:
    """The DLQ's retention in seconds (None: not known) and what is wrong with it.

    A created DLQ keeps ``dead_letter_retention_period`` (14 days unset). A DLQ the app
    defines keeps its own retention, read from it: setting ``dead_letter_retention_period``
    too is an error that names where to set it instead. An imported DLQ's retention cannot be
    read: ``dead_letter_retention_period`` then states it (checked against the source's and
    used for the DLQ expiry alarm), and without it there is no DLQ expiry alarm (a warning)."""
    if dead_letter_queue is None:
        retention = limits.RETENTION_MAX if stated is None else stated_seconds
        return _created_order_problems(fifo, source, source_set, retention), retention
    shown = naming.display(dead_letter_queue)
    own = _own_retention(dead_letter_queue)
    imported = not isinstance(dead_letter_queue.node.default_child, sqs.CfnQueue)
    if not imported:
        cfn = dead_letter_queue.node.default_child
        unset = isinstance(cfn, sqs.CfnQueue) and cfn.message_retention_period is None
        problems = _given_order_problems(
            fifo, source, source_set, own, shown, stated=False, dead_letter_unset=unset
        )
        if stated is not None:
            problems.insert(
                0,
                Problem(
                    "dead_letter_retention_period",
                    stated,
                    f"is read from the dead_letter_queue you gave, {shown}"
                    + (f", which keeps messages {own} s" if own is not None else "")
                    + "; it sets the retention only of a DLQ this construct creates",
                    f"remove dead_letter_retention_period, and set retention_period on {shown} "
                    "to change how long it keeps messages",
                ),
            )
        return problems, own
    if stated is None:
        return [
            Problem(
                "dead_letter_retention_period",
                None,
                f"is not set, and the retention of the imported dead_letter_queue {shown} cannot "
                "be read, so no DLQ expiry alarm is made: dead letters could expire unseen",
                "pass the retention that queue has, e.g. dead_letter_retention_period="
                "Duration.days(14) (the alarm then fires at half the time a dead letter has left)",
                severity="warning",
            )
        ], None
    return (
        _given_order_problems(fifo, source, source_set, stated_seconds, shown, stated=True),
        stated_seconds,
    )


def _source_text(source: int, source_set: bool) -> str:
    return f"{source} s" if source_set else f"{source} s, SQS's default, as it is not set"


def _created_order_problems(
    fifo: bool, source: int | None, source_set: bool, dead_letter: int | None
) -> list[Problem]:
    """A standard source must keep messages for less time than the DLQ created for it; each
    fix offered is one the user can apply (a DLQ already at 14 days cannot be lengthened)."""
    if fifo or source is None or dead_letter is None or source < dead_letter:
        return []
    fixes = []
    shorter = _retention_below(dead_letter)
    if shorter is not None:
        fixes.append(
            f"shorten retention_period below {dead_letter} s, e.g. retention_period={shorter}"
        )
    if dead_letter < limits.RETENTION_MAX:
        fixes.append(
            f"lengthen dead_letter_retention_period above {source} s (at most "
            f"{limits.RETENTION_MAX} s, 14 days), e.g. dead_letter_retention_period="
            "Duration.days(14)"
        )
    return [
        Problem(
            "retention_period",
            source if source_set else naming.Named(f"None ({_source_text(source, False)})"),
            f"must be shorter than dead_letter_retention_period ({dead_letter} s): a standard "
            "queue keeps a message's original enqueue time when it moves to the DLQ, so the DLQ "
            "would delete it on arrival or soon after",
            " or ".join(fixes),
        )
    ]


# Retentions a fix may offer, longest first: SQS's default, then shorter round values.
_RETENTION_EXAMPLES = (
    (limits.RETENTION_DEFAULT, "Duration.days(4)"),
    (24 * 3600, "Duration.days(1)"),
    (3600, "Duration.hours(1)"),
    (600, "Duration.minutes(10)"),
)


def _retention_below(seconds: int) -> str | None:
    """The longest example retention shorter than ``seconds``, as the user would write it."""
    return next((text for value, text in _RETENTION_EXAMPLES if value < seconds), None)


def _given_order_problems(
    fifo: bool,
    source: int | None,
    source_set: bool,
    dead_letter: int | None,
    shown: str,
    stated: bool,
    dead_letter_unset: bool = False,
) -> list[Problem]:
    """The same rule for a DLQ the user gave: the fix names that queue's own retention."""
    if fifo or source is None or dead_letter is None or source < dead_letter:
        return []
    where = (
        f"{shown} keeps messages {dead_letter} s (dead_letter_retention_period, as you state it)"
        if stated
        else f"{shown} keeps messages {dead_letter} s"
        + (", SQS's default, as it sets no retention_period" if dead_letter_unset else "")
    )
    longer = f"a retention_period above {source} s (at most {limits.RETENTION_MAX} s, 14 days)"
    fix = (
        f"if that queue keeps messages longer, state it in dead_letter_retention_period; "
        f"otherwise give it {longer}"
        if stated
        else f"give {shown} {longer}, e.g. sqs.Queue(..., retention_period=Duration.days(14))"
    )
    if source > limits.RETENTION_MIN:
        fix += f", or set this queue's retention_period below {dead_letter} s"
    return [
        Problem(
            "dead_letter_queue",
            naming.Named(shown),
            f"keeps messages no longer than this queue's retention_period "
            f"({_source_text(source, source_set)}): {where}. A standard queue keeps a message's "
            "original enqueue time when it moves to the DLQ, so the DLQ would delete it on "
            "arrival or soon after",
            fix,
        )
    ]


def _own_retention(queue: sqs.IQueue) -> int | None:
    """The retention of a queue defined in this app, when it can be read; None otherwise."""
    cfn = queue.node.default_child
    if not isinstance(cfn, sqs.CfnQueue):
        return None
    value = cfn.message_retention_period
    if value is None:
        return limits.RETENTION_DEFAULT
    return None if Token.is_unresolved(value) else int(value)
