"""Every example value a fix offers is itself valid: fed back in place of the mistake, the call
no longer fails.

The mistakes are derived from the parameter tables (``prop_tables``): for each parameter that
takes a plain value, a value of the wrong kind, a fraction of a second where whole seconds
belong, and the values just outside each end of its range (on the queue type whose range it
is). A few mistakes between props (a batch above 10 without a window, a factor too large for
the function timeout, a retention not shorter than the DLQ's) are listed by input. The fixes
are read from the messages the construct produces, never listed here: a new row in a table,
or a new example in a message, is covered without touching this file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns

from constructs_lib import ConfigurationError, LargePayloads, ResilientQueue, RetryBackoff
from constructs_lib.checks import QueueResilienceChecks
from constructs_lib.params import prop_tables
from constructs_lib.params.kinds import Choice, Flag, Kind, Number, Pair, Seconds, Whole
from constructs_lib.params.table import Param, Table

# The kinds of a plain value, whose examples a fix can write out; the other kinds (constructs,
# jsii interfaces and enums) are named by their type, and tested in test_parameter_types.
VALUE_KINDS: tuple[type[Kind], ...] = (Whole, Number, Seconds, Flag, Choice, Pair)
# How each table is called here; a new table with plain values must be added to call().
CALLED = {
    prop_tables.QUEUE,
    prop_tables.CONSUMER,
    prop_tables.DEAD_LETTER_CONSUMER,
    prop_tables.RETRY_BACKOFF,
    prop_tables.LARGE_PAYLOADS,
    prop_tables.CHECKS,
    prop_tables.PRODUCER,
}
# What a fix's example may use, as a user's module would have imported it.
NAMESPACE = {"Duration": cdk.Duration, "True": True, "False": False}
IMPORTED_ARN = "arn:aws:lambda:us-east-1:123456789012:function:worker"


def call(table: Table, arguments: dict[str, Any], fifo: bool = False) -> None:
    """``table``'s call in a new app with ``arguments`` and valid values for the rest."""
    stack = cdk.Stack(cdk.App(), "FixStack")
    if table is prop_tables.CHECKS:
        QueueResilienceChecks(**arguments)
        return
    if table is prop_tables.QUEUE:
        ResilientQueue(stack, "Orders", **({"fifo": fifo} | arguments))
        return
    if table is prop_tables.LARGE_PAYLOADS:
        ResilientQueue(stack, "Orders", fifo=fifo, large_payloads=LargePayloads(**arguments))
        return
    queue = ResilientQueue(stack, "Orders", fifo=fifo)
    if table is prop_tables.PRODUCER:
        queue.add_producer(sns.Topic(stack, "Events", fifo=fifo or None), **arguments)
        return
    if table is prop_tables.RETRY_BACKOFF:
        queue.add_lambda_consumer(app_function(stack), retry_backoff=RetryBackoff(**arguments))
        return
    add = (
        queue.add_lambda_consumer
        if table is prop_tables.CONSUMER
        else queue.add_dead_letter_consumer
    )
    if "function" not in arguments:
        # An imported function, so that function_timeout is the only timeout there is.
        imported = lambda_.Function.from_function_arn(stack, "Imported", IMPORTED_ARN)
        arguments = {"function": imported, "function_timeout": cdk.Duration.seconds(30)} | (
            arguments
        )
    add(**arguments)


def app_function(stack: cdk.Stack, timeout: int = 30) -> lambda_.Function:
    return lambda_.Function(
        stack,
        "Worker",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
        timeout=cdk.Duration.seconds(timeout),
    )


def failure(table: Table, arguments: dict[str, Any], fifo: bool = False) -> ConfigurationError:
    with pytest.raises(ConfigurationError) as raised:
        call(table, arguments, fifo)
    return raised.value


# --- reading the examples out of a fix ----------------------------------------------------


def expression_at(text: str, start: int) -> str:
    """The Python expression that starts at ``text[start]``: up to a space, comma or semicolon
    outside brackets and quotes."""
    depth, quote, end = 0, "", start
    while end < len(text):
        char = text[end]
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and char in " ,;":
            break
        end += 1
    return text[start:end]


def examples(fix: str, name: str) -> list[str]:
    """Every ``name=<expression>`` the fix offers."""
    return [
        expression_at(fix, match.end())
        for match in re.finditer(rf"(?<![\w.]){re.escape(name)}=", fix)
    ]


def field(prop: str) -> str:
    """The argument a problem's prop stands for: ``retry_backoff.base`` -> ``base``."""
    return prop.removeprefix("retry_backoff.").removeprefix("large_payloads.")


def test_examples_are_read_out_of_a_fix() -> None:
    fix = (
        "lower the factor to at most 48, e.g. visibility_timeout_factor=48, or set "
        'max_batching_window=Duration.seconds(1) or more; pass fail_on="error" or '
        "fail_on='never'"
    )
    assert examples(fix, "visibility_timeout_factor") == ["48"]
    assert examples(fix, "max_batching_window") == ["Duration.seconds(1)"]
    assert examples(fix, "fail_on") == ['"error"', "'never'"]
    assert examples(fix, "batching_window") == []


# --- the mistakes the tables imply ------------------------------------------------------------


def plain_params() -> Iterator[tuple[Table, Param]]:
    for table in prop_tables.TABLES:
        for param in table.params:
            if isinstance(param.kind, VALUE_KINDS):
                yield table, param


def test_every_table_with_plain_values_is_called_here() -> None:
    assert {table.call for table, _ in plain_params()} <= {table.call for table in CALLED}


def test_every_ranged_parameter_has_an_example() -> None:
    missing = [
        f"{table.call}.{param.name}"
        for table, param in plain_params()
        if param.range is not None and not param.example
    ]
    assert missing == []


def seconds(value: float) -> cdk.Duration:
    return cdk.Duration.millis(round(value * 1000))


def mistakes(param: Param) -> Iterator[tuple[str, object, bool]]:
    """(id, value, fifo) for each mistake a user could make with ``param``: the wrong kind,
    a fraction of a second off its own example, just outside each end of its range."""
    wrong = "x" if not isinstance(param.kind, Choice) else 3
    yield "wrong-kind", wrong, False
    yield "wrong-kind-fifo", wrong, True  # FIFO-only props take their example there
    if isinstance(param.kind, Whole):
        yield "float", 5.5, False
    if isinstance(param.kind, Seconds):
        yield "bare-number", 4, False
    if param.range is None:
        return
    as_value = seconds if isinstance(param.kind, Seconds) else (lambda v: v)
    for fifo in (False, True):
        low, high = param.range.bounds(fifo)
        kind = "fifo" if fifo else "standard"
        if fifo and param.range.fifo_high is None:
            continue  # the same range as on a standard queue
        if low > 0 or not isinstance(param.kind, Seconds):  # CDK refuses a negative Duration
            yield f"{kind}-below-{low}", as_value(low - 1), fifo
        if high is not None:
            yield f"{kind}-above-{high}", as_value(high + 1), fifo
    if isinstance(param.kind, Seconds) and param.example:
        example = eval(param.example, NAMESPACE)
        yield "fraction", seconds(example.to_seconds() + 0.5), False


MISTAKES = [
    pytest.param(table, param, mistake, value, fifo, id=f"{table.call}.{param.name}-{mistake}")
    for table, param in plain_params()
    for mistake, value, fifo in mistakes(param)
]


@pytest.mark.parametrize(("table", "param", "mistake", "value", "fifo"), MISTAKES)
def test_each_example_a_fix_offers_is_valid(
    table: Table, param: Param, mistake: str, value: object, fifo: bool
) -> None:
    error = failure(table, {param.name: value}, fifo)
    offered = [
        example
        for problem in error.problems
        if field(problem.prop) == param.name
        for example in examples(problem.fix, param.name)
    ]
    named = [p for p in error.problems if field(p.prop) == param.name]
    assert named, f"no problem names {param.name}: {error}"
    if not offered:
        # Only where no value would do (a FIFO-only prop on a standard queue...) may a fix
        # offer none; it says to remove the prop instead.
        assert all(p.fix.startswith("remove it") for p in named), str(error)
        assert param.range is None or mistake.startswith("wrong-kind"), str(error)
    for example in offered:
        call(table, {param.name: eval(example, NAMESPACE)}, fifo)


# --- the mistakes between props ---------------------------------------------------------------

BETWEEN = [
    pytest.param(
        prop_tables.CONSUMER,
        {"batch_size": 100, "max_batching_window": cdk.Duration.millis(500)},
        "max_batching_window",
        id="batch-100-window-500ms",
    ),
    pytest.param(prop_tables.CONSUMER, {"batch_size": 11}, "max_batching_window", id="batch-11"),
    pytest.param(
        prop_tables.CONSUMER,
        {"visibility_timeout_factor": 60, "function_timeout": cdk.Duration.minutes(15)},
        "visibility_timeout_factor",
        id="factor-60-timeout-900",
    ),
    pytest.param(
        prop_tables.CONSUMER,
        {
            "visibility_timeout_factor": 48,
            "function_timeout": cdk.Duration.minutes(15),
            "max_batching_window": cdk.Duration.minutes(5),
        },
        "visibility_timeout_factor",
        id="factor-48-timeout-900-window-300",
    ),
    pytest.param(
        prop_tables.CONSUMER,
        {"function": "imported", "function_timeout": None},
        "function_timeout",
        id="imported-without-timeout",
    ),
    pytest.param(
        prop_tables.QUEUE,
        {"retention_period": cdk.Duration.days(14)},
        "retention_period",
        id="retention-as-long-as-the-dlq",
    ),
    pytest.param(
        prop_tables.QUEUE,
        {
            "retention_period": cdk.Duration.days(10),
            "dead_letter_retention_period": cdk.Duration.days(5),
        },
        "retention_period",
        id="retention-longer-than-the-dlq-shorten",
    ),
    pytest.param(
        prop_tables.QUEUE,
        {
            "retention_period": cdk.Duration.days(10),
            "dead_letter_retention_period": cdk.Duration.days(5),
        },
        "dead_letter_retention_period",
        id="retention-longer-than-the-dlq-lengthen",
    ),
    pytest.param(
        prop_tables.QUEUE,
        {
            "retention_period": cdk.Duration.minutes(2),
            "visibility_timeout": cdk.Duration.seconds(30),
        },
        "retention_period",
        id="retention-shorter-than-the-receives",
    ),
    pytest.param(
        prop_tables.QUEUE,
        {"expected_traffic": cdk.Duration.seconds(90)},
        "expected_traffic",
        id="traffic-not-whole-minutes",
    ),
]


@pytest.mark.parametrize(("table", "arguments", "prop"), BETWEEN)
def test_each_example_a_fix_between_props_offers_is_valid(
    table: Table, arguments: dict[str, Any], prop: str
) -> None:
    if arguments.get("function") == "imported":
        stack = cdk.Stack(cdk.App(), "FixStack")
        queue = ResilientQueue(stack, "Orders")
        imported = lambda_.Function.from_function_arn(stack, "Imported", IMPORTED_ARN)
        with pytest.raises(ConfigurationError) as raised:
            queue.add_lambda_consumer(imported)
        [example] = examples(raised.value.problems[0].fix, prop)
        queue.add_lambda_consumer(imported, **{prop: eval(example, NAMESPACE)})
        return
    error = failure(table, arguments)
    offered = [e for p in error.problems for e in examples(p.fix, prop)]
    assert offered, f"no example for {prop} in: {error}"
    for example in offered:
        call(table, arguments | {prop: eval(example, NAMESPACE)})
