"""``add_lambda_consumer(retry_backoff=...)``: the schedule in the function's environment, the
layer with ``constructs_lib.backoff``, the grant left as it was, the worst case against the
retention, every wrong value, the functions whose environment the app cannot set, FIFO, other
runtimes, Lambda's layer limit, and a stack using it judged by the audit and cdk-nag."""

from __future__ import annotations

import contextlib
import json
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Match
from cdk_nag import AwsSolutionsChecks, HIPAASecurityChecks, NIST80053R5Checks, ServerlessChecks

from constructs_lib import (
    ConfigurationError,
    ParameterTypeError,
    ResilientQueue,
    RetryBackoff,
    backoff,
    limits,
)
from constructs_lib.checks import QueueResilienceChecks
from constructs_lib.consumer import backoff_layer as consumer_backoff
from constructs_lib.consumer.backoff_layer import LAYER_ID, RUNTIME_FILES
from constructs_lib.params import prop_tables
from tests.conftest import REPO_ROOT
from tests.constructs.conftest import FunctionFactory, resources_of_type, warnings_matching
from tests.constructs.consumer.test_consumer import consumer_statements

IMPORTED_ARN = "arn:aws:lambda:eu-west-1:111111111111:function:elsewhere"


def function_properties(stack: cdk.Stack, function: lambda_.Function) -> dict[str, Any]:
    logical_id = stack.get_logical_id(function.node.default_child)  # type: ignore[arg-type]
    properties: dict[str, Any] = resources_of_type(stack, "AWS::Lambda::Function")[logical_id][
        "Properties"
    ]  # type: ignore[assignment]
    return properties


def environment(stack: cdk.Stack, function: lambda_.Function) -> dict[str, str]:
    variables: dict[str, str] = (
        function_properties(stack, function).get("Environment", {}).get("Variables", {})
    )
    return variables


def layers(stack: cdk.Stack) -> dict[str, dict[str, object]]:
    return resources_of_type(stack, "AWS::Lambda::LayerVersion")


def infos(stack: cdk.Stack, text: str) -> list[str]:
    messages = Annotations.from_stack(stack).find_info("*", Match.any_value())
    return [str(m.entry.data) for m in messages if text in str(m.entry.data)]


# --- the environment -------------------------------------------------------------------------


def test_the_function_gets_the_schedule_with_the_queues_receives_and_retention(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(
        stack, "Orders", max_receive_count=7, retention_period=cdk.Duration.days(2)
    )
    function = make_function()
    consumer = queue.add_lambda_consumer(
        function,
        retry_backoff=RetryBackoff(
            base=cdk.Duration.seconds(20), factor=3, cap=cdk.Duration.minutes(10), jitter=0.25
        ),
    )

    expected = backoff.Backoff(20, 3, 600, 0.25, max_receive_count=7, retention_seconds=172_800)
    assert environment(stack, function) == expected.to_environment()
    assert environment(stack, function) == {
        backoff.ENV_BASE: "20",
        backoff.ENV_FACTOR: "3.0",
        backoff.ENV_CAP: "600",
        backoff.ENV_JITTER: "0.25",
        backoff.ENV_MAX_RECEIVE_COUNT: "7",
        backoff.ENV_RETENTION: "172800",
    }
    assert consumer.settings.retry_backoff == expected
    # A handler reads back exactly what was checked.
    assert backoff.Backoff.from_environment(environment(stack, function)) == expected


def test_the_defaults_are_the_runtime_helpers(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    function = make_function()
    ResilientQueue(stack, "Orders").add_lambda_consumer(function, retry_backoff=RetryBackoff())

    variables = environment(stack, function)
    assert variables[backoff.ENV_BASE] == str(backoff.BASE_DEFAULT)
    assert variables[backoff.ENV_CAP] == str(backoff.CAP_DEFAULT)
    assert float(variables[backoff.ENV_FACTOR]) == backoff.FACTOR_DEFAULT
    assert float(variables[backoff.ENV_JITTER]) == backoff.JITTER_DEFAULT


def test_without_retry_backoff_nothing_is_added(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    function = make_function()
    consumer = ResilientQueue(stack, "Orders").add_lambda_consumer(function)

    assert environment(stack, function) == {}
    assert layers(stack) == {}
    assert consumer.settings.retry_backoff is None


def test_the_visibility_timeout_stays_derived_from_the_function(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders")
    queue.add_lambda_consumer(make_function(30), retry_backoff=RetryBackoff())

    assert queue.visibility_timeout == 6 * 30


def test_the_dead_letter_consumer_takes_no_backoff(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders")
    with pytest.raises(TypeError, match="retry_backoff"):
        queue.add_dead_letter_consumer(make_function(), retry_backoff=RetryBackoff())  # type: ignore[call-arg]


def test_the_retries_page_shows_the_declared_fields() -> None:
    page = (REPO_ROOT / "docs" / "retries.md").read_text()
    assert prop_tables.RETRY_BACKOFF.render_markdown() in page
    assert "## The consumer option" in page


# --- the layer -------------------------------------------------------------------------------


def synth_layer_directory(outdir: Path) -> tuple[Path, str]:
    """The staged layer asset of a synthesized app, and its S3 key."""
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Layered")
    function = lambda_.Function(
        stack,
        "Worker",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
        timeout=cdk.Duration.seconds(30),
    )
    ResilientQueue(stack, "Orders").add_lambda_consumer(function, retry_backoff=RetryBackoff())
    app.synth()
    template = json.loads((outdir / "Layered.template.json").read_text())
    layer = next(
        r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::LayerVersion"
    )
    key = layer["Properties"]["Content"]["S3Key"]
    assets = json.loads((outdir / "Layered.assets.json").read_text())
    source = assets["files"][key.removesuffix(".zip")]["source"]
    return outdir / source["path"], key


def test_the_layer_holds_exactly_the_packages_runtime_files(tmp_path: Path) -> None:
    directory, _ = synth_layer_directory(tmp_path)

    files = sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())
    assert files == sorted(f"python/constructs_lib/{name}" for name in RUNTIME_FILES)
    package = Path(backoff.__file__).parent
    for name in RUNTIME_FILES:
        staged = directory / "python" / "constructs_lib" / name
        assert staged.read_bytes() == (package / name).read_bytes()
        assert staged.stat().st_mode & 0o444 == 0o444  # readable by Lambda's runtime user


def test_the_layer_imports_without_aws_cdk(tmp_path: Path) -> None:
    directory, _ = synth_layer_directory(tmp_path)
    # -S: no site-packages, so neither aws-cdk-lib nor this checkout can be imported; only the
    # layer's python/ directory, as Lambda puts /opt/python on the path.
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "from constructs_lib.backoff import Backoff; "
        "from constructs_lib.backoff_batch import process_batch; "
        "assert not any(m.startswith(('aws_cdk', 'jsii')) for m in sys.modules); "
        "print(Backoff().ceiling(2))"
    )
    completed = subprocess.run(
        [sys.executable, "-S", "-I", "-c", script, str(directory / "python")],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == str(backoff.BASE_DEFAULT * 2)


def test_the_layers_asset_hash_is_the_same_in_every_synth(tmp_path: Path) -> None:
    _, first = synth_layer_directory(tmp_path / "one")
    # Staged again in another directory, as a new process would: the hash is the contents'.
    consumer_backoff._layer_source.cache_clear()
    _, second = synth_layer_directory(tmp_path / "two")

    assert first == second


def test_one_layer_per_stack_serves_every_consumer(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    first, second = make_function(), make_function()
    ResilientQueue(stack, "Orders").add_lambda_consumer(first, retry_backoff=RetryBackoff())
    ResilientQueue(stack, "Payments").add_lambda_consumer(second, retry_backoff=RetryBackoff())

    (layer_id,) = layers(stack)
    assert layer_id.startswith(LAYER_ID)
    for function in (first, second):
        assert function_properties(stack, function)["Layers"] == [{"Ref": layer_id}]


def test_each_stack_has_its_own_layer(make_function: FunctionFactory) -> None:
    app = cdk.App()
    stacks = [cdk.Stack(app, name) for name in ("One", "Two")]
    for stack in stacks:
        ResilientQueue(stack, "Orders").add_lambda_consumer(
            make_function(scope=stack), retry_backoff=RetryBackoff()
        )

    assert [len(layers(stack)) for stack in stacks] == [1, 1]


def test_layer_false_sets_the_environment_without_a_layer(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    function = make_function()
    ResilientQueue(stack, "Orders").add_lambda_consumer(
        function, retry_backoff=RetryBackoff(layer=False)
    )

    assert layers(stack) == {}
    assert "Layers" not in function_properties(stack, function)
    assert backoff.ENV_BASE in environment(stack, function)


def test_a_function_with_lambdas_five_layers_gets_a_clear_error(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    function = make_function()
    for index in range(limits.LAYERS_PER_FUNCTION_MAX):
        function.add_layers(
            lambda_.LayerVersion.from_layer_version_arn(
                stack, f"Layer{index}", f"arn:aws:lambda:eu-west-1:111111111111:layer:l{index}:1"
            )
        )
    queue = ResilientQueue(stack, "Orders")

    with pytest.raises(ConfigurationError) as raised:
        queue.add_lambda_consumer(function, retry_backoff=RetryBackoff())
    (problem,) = raised.value.problems
    assert problem.prop == "retry_backoff.layer"
    assert "already has 5" in problem.rule and "allows 5 layers" in problem.rule
    assert "RetryBackoff(layer=False)" in problem.fix
    # With the package bundled, the same function may back off.
    queue.add_lambda_consumer(function, retry_backoff=RetryBackoff(layer=False))


def test_a_function_with_four_layers_takes_the_fifth(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    function = make_function()
    for index in range(limits.LAYERS_PER_FUNCTION_MAX - 1):
        function.add_layers(
            lambda_.LayerVersion.from_layer_version_arn(
                stack, f"Layer{index}", f"arn:aws:lambda:eu-west-1:111111111111:layer:l{index}:1"
            )
        )
    ResilientQueue(stack, "Orders").add_lambda_consumer(function, retry_backoff=RetryBackoff())

    assert len(function_properties(stack, function)["Layers"]) == limits.LAYERS_PER_FUNCTION_MAX


def test_a_function_consuming_two_queues_alike_gets_the_layer_once(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    function = make_function()
    for name in ("Orders", "Refunds"):
        ResilientQueue(stack, name).add_lambda_consumer(function, retry_backoff=RetryBackoff())

    (layer_id,) = layers(stack)
    assert function_properties(stack, function)["Layers"] == [{"Ref": layer_id}]


def test_a_function_reads_one_schedule(stack: cdk.Stack, make_function: FunctionFactory) -> None:
    function = make_function()
    ResilientQueue(stack, "Orders").add_lambda_consumer(function, retry_backoff=RetryBackoff())

    with pytest.raises(ConfigurationError) as raised:
        ResilientQueue(stack, "Refunds", max_receive_count=9).add_lambda_consumer(
            function, retry_backoff=RetryBackoff()
        )
    (problem,) = raised.value.problems
    assert f"{backoff.ENV_MAX_RECEIVE_COUNT}='5'" in problem.rule
    assert "its own function" in problem.fix


# --- other runtimes, FIFO --------------------------------------------------------------------


def test_a_non_python_function_gets_the_environment_and_an_info_not_a_layer(
    stack: cdk.Stack,
) -> None:
    function = lambda_.Function(
        stack,
        "Node",
        runtime=lambda_.Runtime.NODEJS_22_X,
        handler="index.handler",
        code=lambda_.Code.from_inline("exports.handler = async () => ({});"),
        timeout=cdk.Duration.seconds(30),
    )
    ResilientQueue(stack, "Orders").add_lambda_consumer(function, retry_backoff=RetryBackoff())

    assert layers(stack) == {}
    assert backoff.ENV_BASE in environment(stack, function)
    (info,) = infos(stack, "retry_backoff")
    assert "does not run Python" in info and backoff.ENV_CAP in info


def test_a_fifo_queue_warns_that_backoff_holds_the_group(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Payments", fifo=True)
    queue.add_lambda_consumer(make_function(), retry_backoff=RetryBackoff())

    (warning,) = warnings_matching(stack, "retry_backoff")
    assert "message group" in warning and "order" in warning


def test_a_standard_queue_does_not_warn(stack: cdk.Stack, make_function: FunctionFactory) -> None:
    ResilientQueue(stack, "Orders").add_lambda_consumer(
        make_function(), retry_backoff=RetryBackoff()
    )

    assert warnings_matching(stack, "retry_backoff") == []


def test_backoff_without_batch_item_failures_warns(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    ResilientQueue(stack, "Orders").add_lambda_consumer(
        make_function(), report_batch_item_failures=False, retry_backoff=RetryBackoff()
    )

    (warning,) = warnings_matching(stack, "retry_backoff")
    assert "whole batch" in warning


# --- functions whose environment the app cannot set -------------------------------------------


def test_an_imported_function_is_an_error_naming_the_variables(stack: cdk.Stack) -> None:
    function = lambda_.Function.from_function_arn(stack, "Elsewhere", IMPORTED_ARN)
    queue = ResilientQueue(stack, "Orders")

    with pytest.raises(ConfigurationError) as raised:
        queue.add_lambda_consumer(
            function, function_timeout=cdk.Duration.seconds(30), retry_backoff=RetryBackoff()
        )
    (problem,) = raised.value.problems
    assert problem.prop == "retry_backoff"
    for name in (backoff.ENV_BASE, backoff.ENV_CAP, backoff.ENV_MAX_RECEIVE_COUNT):
        assert name in problem.rule
    assert "cannot set" in problem.rule
    assert queue.consumers == []


def test_an_alias_of_an_imported_version_is_an_error(stack: cdk.Stack) -> None:
    version = lambda_.Version.from_version_arn(stack, "Version", f"{IMPORTED_ARN}:3")
    alias = lambda_.Alias(stack, "Live", alias_name="live", version=version)

    with pytest.raises(ConfigurationError, match=backoff.ENV_BASE):
        ResilientQueue(stack, "Orders").add_lambda_consumer(
            alias, function_timeout=cdk.Duration.seconds(30), retry_backoff=RetryBackoff()
        )


def test_a_published_version_is_an_error(stack: cdk.Stack, make_function: FunctionFactory) -> None:
    # A version keeps the environment it was published with.
    version = lambda_.Version(stack, "Published", lambda_=make_function())

    with pytest.raises(ConfigurationError, match="published version keeps its environment"):
        ResilientQueue(stack, "Orders").add_lambda_consumer(
            version, function_timeout=cdk.Duration.seconds(30), retry_backoff=RetryBackoff()
        )


def test_an_alias_of_the_current_version_sets_the_functions_environment(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    function = make_function()
    alias = function.add_alias("live")
    ResilientQueue(stack, "Orders").add_lambda_consumer(
        alias, function_timeout=cdk.Duration.seconds(30), retry_backoff=RetryBackoff()
    )

    assert backoff.ENV_BASE in environment(stack, function)
    assert len(layers(stack)) == 1


def test_the_current_version_sets_the_functions_environment(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    # CDK publishes a new current version when the environment changes.
    function = make_function()
    ResilientQueue(stack, "Orders").add_lambda_consumer(
        function.current_version,
        function_timeout=cdk.Duration.seconds(30),
        retry_backoff=RetryBackoff(),
    )

    assert backoff.ENV_BASE in environment(stack, function)


# --- the grant -------------------------------------------------------------------------------


def statements_with_and_without_backoff(key: bool) -> tuple[list[Any], list[Any]]:
    results = []
    for retry in (None, RetryBackoff()):
        stack = cdk.Stack(cdk.App(), "Grants")
        encryption_key = kms.Key(stack, "Key") if key else None
        function = lambda_.Function(
            stack,
            "Worker",
            runtime=lambda_.Runtime.PYTHON_3_14,
            handler="index.handler",
            code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
            timeout=cdk.Duration.seconds(30),
        )
        ResilientQueue(
            stack, "Orders", queue_name="orders", encryption_key=encryption_key
        ).add_lambda_consumer(function, retry_backoff=retry)
        results.append(consumer_statements(stack))
    return results[0], results[1]


def test_the_grant_already_holds_change_message_visibility_and_nothing_is_added() -> None:
    without, with_backoff = statements_with_and_without_backoff(key=False)

    assert with_backoff == without
    (statement,) = with_backoff
    # ChangeMessageVisibility, which the handler calls, is part of consuming.
    assert statement["Action"] == [
        "sqs:ChangeMessageVisibility",
        "sqs:DeleteMessage",
        "sqs:GetQueueAttributes",
        "sqs:GetQueueUrl",
        "sqs:ReceiveMessage",
    ]
    resource: Any = statement["Resource"]
    assert resource["Fn::GetAtt"][0].startswith("Orders")  # on this queue only


def test_no_new_kms_statement_for_an_encrypted_queue() -> None:
    # ChangeMessageVisibility calls no KMS action (SQS developer guide, sqs-key-management:
    # consumers need kms:Decrypt, for ReceiveMessage only).
    without, with_backoff = statements_with_and_without_backoff(key=True)

    assert with_backoff == without
    kms_statements = [s for s in with_backoff if "kms" in str(s["Action"])]
    assert [s["Action"] for s in kms_statements] == ["kms:Decrypt"]


# --- the worst case against the retention -----------------------------------------------------

# A 10 s function: the visibility timeout is 60 s. Five receives with the default schedule wait
# 10, 20, 40, 80 s and then not at all; each receive holds the message at least 60 s.
WORST_CASE = backoff.Backoff(max_receive_count=5).worst_case_seconds(60, 10)


def test_the_worst_case_of_the_boundary_tests() -> None:
    assert WORST_CASE == 60 + 60 + 60 + (10 + 80) + 60 == 330
    assert WORST_CASE - 1 > 5 * 60  # without backoff each of these retentions is enough


@pytest.mark.parametrize(
    ("retention", "accepted"),
    [(WORST_CASE - 1, False), (WORST_CASE, False), (WORST_CASE + 1, True)],
)
def test_the_worst_case_must_stay_below_the_retention(
    stack: cdk.Stack, make_function: FunctionFactory, retention: int, accepted: bool
) -> None:
    queue = ResilientQueue(stack, "Orders", retention_period=cdk.Duration.seconds(retention))
    function = make_function(10)
    if accepted:
        queue.add_lambda_consumer(function, retry_backoff=RetryBackoff())
        assert len(queue.consumers) == 1
        return
    with pytest.raises(ConfigurationError) as raised:
        queue.add_lambda_consumer(function, retry_backoff=RetryBackoff())
    (problem,) = raised.value.problems
    assert problem.prop == "retention_period" and problem.value == retention
    assert "waits 10, 20, 40, 80, 0 s" in problem.rule
    assert f"{WORST_CASE} s" in problem.rule and "60 s visibility timeout" in problem.rule
    assert "cap or base" in problem.fix and "max_receive_count" in problem.fix
    assert f"longer than {WORST_CASE} s" in problem.fix


def test_without_backoff_the_same_retention_is_enough(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders", retention_period=cdk.Duration.seconds(WORST_CASE))
    queue.add_lambda_consumer(make_function(10))


def test_a_later_consumer_that_lengthens_the_visibility_timeout_is_checked_with_the_schedule(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    # The first consumer fits; the second raises the visibility timeout to 6 x 15 = 90 s, and
    # the first consumer's schedule then needs 90 x 4 + (10 + 80) = 450 s.
    queue = ResilientQueue(stack, "Orders", retention_period=cdk.Duration.seconds(400))
    queue.add_lambda_consumer(make_function(10), retry_backoff=RetryBackoff())

    with pytest.raises(ConfigurationError, match="450 s"):
        queue.add_lambda_consumer(make_function(15))


def test_a_long_schedule_is_named_with_its_repeats(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(
        stack, "Orders", max_receive_count=20, retention_period=cdk.Duration.hours(2)
    )
    with pytest.raises(ConfigurationError) as raised:
        queue.add_lambda_consumer(make_function(10), retry_backoff=RetryBackoff())
    assert "10, 20, 40, 80, 160, 320, 640, 900 x 12, 0 s" in raised.value.problems[0].rule


# --- wrong values and kinds ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("retry", "prop", "words"),
    [
        (RetryBackoff(base=cdk.Duration.seconds(0)), "retry_backoff.base", "between 1 and 43200"),
        (
            RetryBackoff(base=cdk.Duration.seconds(43_201), cap=cdk.Duration.seconds(43_201)),
            "retry_backoff.base",
            "between 1 and 43200",
        ),
        (RetryBackoff(base=cdk.Duration.millis(1500)), "retry_backoff.base", "whole seconds"),
        (RetryBackoff(cap=cdk.Duration.hours(13)), "retry_backoff.cap", "between 1 and 43200"),
        (
            RetryBackoff(base=cdk.Duration.minutes(5), cap=cdk.Duration.minutes(1)),
            "retry_backoff.cap",
            "below base",
        ),
        (RetryBackoff(factor=0.5), "retry_backoff.factor", "between 1 and 10"),
        (RetryBackoff(factor=11), "retry_backoff.factor", "between 1 and 10"),
        (RetryBackoff(factor=math.nan), "retry_backoff.factor", "finite"),
        (RetryBackoff(jitter=-0.1), "retry_backoff.jitter", "between 0 and 1"),
        (RetryBackoff(jitter=1.5), "retry_backoff.jitter", "between 0 and 1"),
        (
            RetryBackoff(base=cdk.Duration.seconds(cdk.Token.as_number(cdk.Aws.ACCOUNT_ID))),
            "retry_backoff.base",
            "unresolved token",
        ),
    ],
)
def test_a_value_out_of_range_is_a_configuration_error(
    stack: cdk.Stack, make_function: FunctionFactory, retry: RetryBackoff, prop: str, words: str
) -> None:
    queue = ResilientQueue(stack, "Orders")
    with pytest.raises(ConfigurationError) as raised:
        queue.add_lambda_consumer(make_function(), retry_backoff=retry)

    (problem, *_) = [p for p in raised.value.problems if p.prop == prop]
    assert words in problem.rule
    assert problem.fix
    assert prop in str(raised.value)
    assert queue.consumers == []


@pytest.mark.parametrize(
    ("retry", "words"),
    [
        (RetryBackoff(base=10), "retry_backoff.base"),  # type: ignore[arg-type]
        (RetryBackoff(cap="15m"), "retry_backoff.cap"),  # type: ignore[arg-type]
        (RetryBackoff(factor="2"), "retry_backoff.factor"),  # type: ignore[arg-type]
        (RetryBackoff(factor=True), "retry_backoff.factor"),
        (RetryBackoff(jitter=None), "retry_backoff.jitter"),  # type: ignore[arg-type]
        (RetryBackoff(layer="yes"), "retry_backoff.layer"),  # type: ignore[arg-type]
        ({"base": 10}, "retry_backoff="),
    ],
)
def test_a_value_of_the_wrong_kind_is_a_type_error(
    stack: cdk.Stack, make_function: FunctionFactory, retry: Any, words: str
) -> None:
    with pytest.raises(TypeError, match=words):
        ResilientQueue(stack, "Orders").add_lambda_consumer(make_function(), retry_backoff=retry)


def test_wrong_kinds_in_the_fields_are_listed_with_the_calls_others(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    with pytest.raises(ParameterTypeError) as raised:
        ResilientQueue(stack, "Orders").add_lambda_consumer(
            make_function(),
            batch_size="10",  # type: ignore[arg-type]
            retry_backoff=RetryBackoff(base=10, jitter="0.5"),  # type: ignore[arg-type]
        )

    props = [p.prop for p in raised.value.problems]
    assert props == ["batch_size", "retry_backoff.base", "retry_backoff.jitter"]
    assert "Duration.seconds(10)" in str(raised.value)


# --- the audit and cdk-nag -------------------------------------------------------------------


@dataclass
class _Templates:
    """What a validation plugin is given: the templates to judge."""

    template_paths: list[str]


def judged_app(outdir: Path) -> tuple[dict[str, Any], QueueResilienceChecks]:
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Backoff")
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    alarms = sns.Topic(stack, "Alarms", enforce_ssl=True, master_key=key)
    actions = [cloudwatch_actions.SnsAction(alarms)]
    queue = ResilientQueue(
        stack, "Orders", encryption_key=key, alarm_actions=actions, ok_actions=actions
    )
    function = lambda_.Function(
        stack,
        "Worker",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
        timeout=cdk.Duration.seconds(30),
        reserved_concurrent_executions=20,
    )
    queue.add_lambda_consumer(function, max_concurrency=20, retry_backoff=RetryBackoff())
    audit = QueueResilienceChecks(fail_on="info")
    cdk.Validations.of(app).add_plugins(
        audit,
        AwsSolutionsChecks(app),
        ServerlessChecks(app),
        NIST80053R5Checks(app),
        HIPAASecurityChecks(app),
    )
    # The test's own function and key break rules of the packs (no VPC, no DLQ...): the synth
    # fails, and the report is written either way.
    with contextlib.suppress(Exception):
        app.synth()
    report: dict[str, Any] = json.loads((outdir / "validation-report.json").read_text())
    return report, audit


def test_the_audit_and_the_four_packs_find_nothing_in_what_backoff_adds(tmp_path: Path) -> None:
    report, audit = judged_app(tmp_path)

    # CDK leaves a plugin that passed without findings out of the report: ask it again.
    assert audit.findings == []
    again = QueueResilienceChecks(fail_on="info")
    result = again.validate(_Templates([str(tmp_path / "Backoff.template.json")]))  # type: ignore[arg-type]
    assert result.success and again.findings == []
    names = {r["pluginName"] for r in report["pluginReports"]}
    assert {"AwsSolutions", "Serverless", "NIST.800.53.R5", "HIPAA.Security"} <= names
    on_library = [
        (r["pluginName"], v["ruleName"], c["constructPath"])
        for r in report["pluginReports"]
        for v in r["violations"]
        for c in v["violatingConstructs"]
        if c["constructPath"].startswith(("Backoff/Orders/", f"Backoff/{LAYER_ID}"))
        or "SqsEventSource" in c["constructPath"]
    ]
    assert on_library == []
