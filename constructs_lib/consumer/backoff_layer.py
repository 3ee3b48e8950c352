"""A source-queue consumer's ``retry_backoff``: its checks, the schedule in the function's
environment, and the Lambda layer that lets a Python handler import ``constructs_lib.backoff``.

The schedule reaches the handler as environment variables (``Backoff.to_environment``), so only a
function the app defines (or an alias or version that is its ``current_version``, which CDK
republishes when the environment changes) can take it. The layer holds exactly the package's
runtime files: ``constructs_lib/__init__.py`` imports only the standard library and ``errors``
at import time, so ``import constructs_lib.backoff`` works in Lambda without aws-cdk-lib. One
layer per stack serves every consumer in it.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import Annotations, AssetHashType, Stack
from aws_cdk import aws_lambda as lambda_

from constructs_lib import limits
from constructs_lib.backoff import Backoff, BackoffError
from constructs_lib.errors import Problem
from constructs_lib.params import backoff_fields
from constructs_lib.queue import naming
from constructs_lib.retry_backoff import RetryBackoff

LAYER_ID = "ConstructsLibBackoffLayer"
"""The construct id of the layer, a child of the function's stack (found or created)."""
RUNTIME_FILES = (
    "__init__.py",
    "errors.py",
    "limits.py",
    "backoff.py",
    "backoff_batch.py",
    "time_budget.py",
)
"""What ``import constructs_lib.backoff`` and ``constructs_lib.backoff_batch`` load (boto3 comes
with the Lambda runtime): the layer holds these, under
``python/constructs_lib/`` (Lambda adds ``/opt/python`` to a Python function's path)."""
PAYLOADS_LAYER_ID = "ConstructsLibPayloadsLayer"
"""The construct id of the layer for consumers of a queue with ``large_payloads``."""
PAYLOAD_RUNTIME_FILES = (*RUNTIME_FILES, "large_payloads.py")
"""The backoff layer's files and ``constructs_lib.large_payloads``: a consumer with large
payloads gets this one layer, with or without ``retry_backoff``. A second layer rather than
one more file in the first, so that the backoff layer's asset hash, and every stack that has it,
stays as it was when large payloads are not used."""


@dataclass(frozen=True)
class BackoffPlan:
    """What a consumer's ``retry_backoff`` does to its function, decided before anything is
    built: the schedule, the function whose environment takes it, and whether it gets the
    layer (a Python function of the app, unless ``layer=False``)."""

    schedule: Backoff
    function: lambda_.Function
    layer: bool
    python: bool = True
    """Whether the function runs Python (else no layer, and an info saying so)."""

    def apply(self) -> None:
        """Write the schedule into the environment and add the stack's layer (call once the
        consumer's checks passed)."""
        for name, value in self.schedule.to_environment().items():
            self.function.add_environment(name, value)
        if not self.python:
            names = ", ".join(self.schedule.to_environment())
            Annotations.of(self.function).add_info(
                f"retry_backoff: {naming.display(self.function)} does not run Python, so it gets "
                f"no layer; its environment holds the schedule ({names}) for a backoff of its "
                "own (ChangeMessageVisibility with the wait before reporting the failure)"
            )
            return
        if self.layer:
            self.function.add_layers(backoff_layer(Stack.of(self.function)))


def plan(
    retry: RetryBackoff,
    function: lambda_.IFunction,
    *,
    fifo: bool,
    max_receive_count: int | None,
    retention: int | None,
    report_batch_item_failures: bool = True,
) -> tuple[BackoffPlan | None, list[Problem]]:
    """The plan for ``retry`` on ``function``, or None with the problems that prevent it
    (call after ``params.backoff_fields.check_consumer_kinds``)."""
    problems = backoff_fields.field_problems(retry)
    if problems:
        return None, problems
    try:
        schedule = retry.to_backoff(max_receive_count, retention)
    except BackoffError as error:  # the queue's own checks make this unreachable; say it anyway
        return None, [Problem("retry_backoff", retry, str(error), "check the queue's settings")]
    target = settable_function(function)
    if target is None:
        return None, [_environment_unreachable(function, schedule)]
    # Resolved once: reading the function's properties back is the costly part of a synth here.
    properties = function_properties(target)
    problems = _environment_conflicts(target, schedule, properties)
    layers = list(properties.get("layers") or [])
    python = is_python(target)
    wants_layer = retry.layer and python
    if wants_layer:
        held = holds_layer(target, layers)
        problems += [] if held else layer_count_problems(target, len(layers))
        wants_layer = not held
    if fifo:
        problems.append(_fifo_warning(retry))
    if not report_batch_item_failures:
        problems.append(_whole_batch_warning(retry))
    return BackoffPlan(schedule, target, wants_layer, python), problems


def settable_function(function: lambda_.IFunction) -> lambda_.Function | None:
    """The function whose environment reaches ``function``'s invocations, or None: an imported
    function, or a version other than the function's ``current_version`` (a published version
    keeps the environment it was published with)."""
    if isinstance(function, lambda_.Function):
        return function
    version: object = function.version if isinstance(function, lambda_.Alias) else function
    if isinstance(version, lambda_.Version):
        underlying = version.lambda_
        if (
            isinstance(underlying, lambda_.Function)
            and version.node.path == f"{underlying.node.path}/CurrentVersion"
        ):
            return underlying
    return None


@functools.cache
def _layer_source(files: tuple[str, ...] = RUNTIME_FILES) -> tuple[str, str]:
    """The layer's directory, staged once per process with fixed contents and modes, and the
    hash of those contents: the asset hash (and so the template) does not change between
    synths, machines or checkouts."""
    root = Path(tempfile.mkdtemp(prefix="constructs-lib-backoff-layer-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    package = root / "python" / "constructs_lib"
    package.mkdir(parents=True)
    digest = hashlib.sha256()
    for name in files:
        data = resources.files("constructs_lib").joinpath(name).read_bytes()
        (package / name).write_bytes(data)
        (package / name).chmod(0o644)  # Lambda reads /opt as another user
        digest.update(f"{name}\0{len(data)}\0".encode() + data)
    for directory in (root, root / "python", package):
        directory.chmod(0o755)
    return str(root), digest.hexdigest()


def backoff_layer(stack: Stack, payloads: bool = False) -> lambda_.LayerVersion:
    """The stack's layer holding ``constructs_lib.backoff`` (with ``payloads``, and
    ``constructs_lib.large_payloads``), created by its first consumer."""
    layer_id = PAYLOADS_LAYER_ID if payloads else LAYER_ID
    existing = stack.node.try_find_child(layer_id)
    if isinstance(existing, lambda_.LayerVersion):
        return existing
    directory, digest = _layer_source(PAYLOAD_RUNTIME_FILES if payloads else RUNTIME_FILES)
    return lambda_.LayerVersion(
        stack,
        layer_id,
        code=lambda_.Code.from_asset(
            directory, asset_hash=digest, asset_hash_type=AssetHashType.CUSTOM
        ),
        description="constructs_lib.large_payloads and constructs_lib.backoff: S3 payloads and "
        "retry backoff for SQS consumers (no dependencies)"
        if payloads
        else "constructs_lib.backoff: retry backoff for SQS consumers (no dependencies)",
    )


# --- checks -----------------------------------------------------------------------------------


def _environment_unreachable(function: lambda_.IFunction, schedule: Backoff) -> Problem:
    variables = ", ".join(f"{k}={v}" for k, v in schedule.to_environment().items())
    return Problem(
        "retry_backoff",
        function,
        f"needs the environment of {naming.display(function)}, which the app cannot set (an "
        "imported function, or a version or alias other than a function's current_version: a "
        "published version keeps its environment); without these variables the handler would "
        f"wait by another schedule than the one checked against the retention: {variables}",
        "consume with a lambda_.Function of this app (or an alias of its current_version), or "
        "set those variables on the function where it is deployed and leave retry_backoff unset",
    )


def function_properties(function: lambda_.Function) -> Mapping[str, Any]:
    # CfnFunction.environment reads back as an empty struct proxy (the value is lazy): the
    # resource's properties, resolved, say what the template will hold.
    properties = Stack.of(function).resolve(jsii.get(function.node.default_child, "cfnProperties"))
    return properties if isinstance(properties, dict) else {}


def function_layers(function: lambda_.Function) -> list[Any]:
    """The function's layers as the template will hold them: the property alone, resolved
    (cheaper than ``function_properties`` where the environment is not needed)."""
    cfn = function.node.default_child
    layers = (
        Stack.of(function).resolve(cfn.layers) if isinstance(cfn, lambda_.CfnFunction) else None
    )
    return list(layers) if isinstance(layers, list) else []


def _environment_conflicts(
    function: lambda_.Function, schedule: Backoff, properties: Mapping[str, Any]
) -> list[Problem]:
    """A function reads one schedule: another queue's retry_backoff, or the app's own value
    of one of its variables, must agree."""
    variables = (properties.get("environment") or {}).get("variables") or {}
    clashes = {
        name: (variables[name], value)
        for name, value in schedule.to_environment().items()
        if name in variables and variables[name] != value
    }
    if not clashes:
        return []
    return [
        Problem(
            "retry_backoff",
            {name: new for name, (_, new) in clashes.items()},
            f"contradicts what {naming.display(function)}'s environment already holds ("
            + ", ".join(f"{name}={old!r}" for name, (old, _) in clashes.items())
            + "), from another queue's retry_backoff or from the app: the handler reads one "
            "schedule",
            "give each queue its own function, or the same retry_backoff to queues with the same "
            "max_receive_count and retention, and leave these variables to the library",
        )
    ]


def holds_layer(function: lambda_.Function, layers: list[Any], layer_id: str = LAYER_ID) -> bool:
    """Whether ``layers`` (the function's, resolved) already hold the stack's backoff layer (or
    the layer ``layer_id``)."""
    existing = Stack.of(function).node.try_find_child(layer_id)
    if not isinstance(existing, lambda_.LayerVersion):
        return False
    return Stack.of(function).resolve(existing.layer_version_arn) in layers


def layer_count_problems(function: lambda_.Function, count: int) -> list[Problem]:
    if count < limits.LAYERS_PER_FUNCTION_MAX:
        return []
    return [
        Problem(
            "retry_backoff.layer",
            True,
            f"needs a layer on {naming.display(function)}, which already has {count}: Lambda "
            f"allows {limits.LAYERS_PER_FUNCTION_MAX} layers per function",
            f"bundle constructs_lib ({', '.join(RUNTIME_FILES)}) with the "
            "function or one of its layers and pass RetryBackoff(layer=False)",
        )
    ]


def _fifo_warning(retry: RetryBackoff) -> Problem:
    return Problem(
        "retry_backoff",
        retry,
        "on a FIFO queue holds the failed message's whole message group while it waits: SQS "
        "delivers no later message of that group until it is deleted or dead-lettered, so a "
        "long backoff stalls the group (the order is kept, as FIFO promises)",
        "keep base and cap short on FIFO queues, or leave retry_backoff unset where a stalled "
        "group costs more than the retries save",
        severity="warning",
    )


def _whole_batch_warning(retry: RetryBackoff) -> Problem:
    return Problem(
        "retry_backoff",
        retry,
        "is set while report_batch_item_failures is off: to fail one message the handler must "
        "fail the whole batch, and every message of it, processed or not, comes back after the "
        "visibility timeout",
        "leave report_batch_item_failures on, so that only the failed messages wait",
        severity="warning",
    )


def is_python(function: lambda_.Function) -> bool:
    return bool(function.runtime.family == lambda_.RuntimeFamily.PYTHON)
