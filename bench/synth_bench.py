#!/usr/bin/env python3
"""Synth time and memory: ResilientQueue against the same resources written by hand.

For K queue + consumer pairs (default 1, 10 and 40) in one stack, three apps are synthesized:

- ``resilient``: ``ResilientQueue`` + ``add_lambda_consumer`` (six alarms included);
- ``l2``: the same resources with plain L2 constructs: two ``sqs.Queue`` (DLQ with 14-day
  retention and a ``byQueue`` redrive-allow policy, SSE-SQS, ``enforce_ssl``), an
  ``SqsEventSource`` publishing its event counts, the same four ``cloudwatch.Alarm`` on the same
  metrics and the consumer's alarm on the mapping's ``FailedInvokeEventCount``;
- ``resilient-payloads`` against ``l2-payloads``: ``large_payloads`` (its bucket, grants,
  environment and layer, and a producer function per pair) against the same written by hand;
- ``solutions``: AWS Solutions Constructs ``SqsToLambda`` with the two alarms it lacks added by
  hand (in-flight and DLQ depth). It pins aws-cdk-lib 2.273, so it runs from its own virtual
  environment (``.bench-venvs/solutions``, installed from ``bench/peers/solutions-constructs.lock``).

Each synth runs as its own process (``python synth_bench.py app <variant> <K>``), as ``cdk synth``
runs an app. Wall time covers the whole process: Python start-up, loading aws-cdk-lib into the
jsii Node.js child, building the constructs and writing the cloud assembly. Memory is reported
twice: ``ru_maxrss`` of the finished process as ``wait4`` returns it (the largest resident set
of the app process and of its waited-for children, which includes jsii's node process), and the
peak of the summed resident set of the whole process tree, sampled every 10 ms from /proc.

Runs are interleaved (one of each variant per round), so concurrent load on the machine hits
every variant alike; ratios are taken per round and their median reported.

    python bench/synth_bench.py                      # K = 1, 10, 40; 3 rounds
    python bench/synth_bench.py --pairs 40 --runs 5
    python bench/synth_bench.py --profile            # jsii calls per pair, by kind
    python bench/synth_bench.py --pairs 1 10 25 --variants resilient-full l2-full --alarm-actions
    python bench/synth_bench.py --variants resilient-payloads l2-payloads --alarm-actions
    CDK_VALIDATION=false python bench/synth_bench.py # without aws-cdk-lib's synth-time validation
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS_PYTHON = REPO_ROOT / ".bench-venvs" / "solutions" / "bin" / "python"
SOLUTIONS_CDK_VERSION = "2.273"
VARIANTS = (
    "resilient",
    "l2",
    "solutions",
    "resilient-full",
    "l2-full",
    "resilient-payloads",
    "l2-payloads",
)
LABELS = {
    "resilient": "ResilientQueue",
    "l2": "hand-written L2",
    "solutions": f"Solutions Constructs SqsToLambda (aws-cdk-lib {SOLUTIONS_CDK_VERSION})",
    "resilient-full": "ResilientQueue, every option (tiers, composite, traffic, fair, backoff)",
    "l2-full": "hand-written L2, the same resources",
    "resilient-payloads": "ResilientQueue with large_payloads, a producer function",
    "l2-payloads": "hand-written L2, the same bucket, grants, environment and layer",
}
# Each variant's ratios are taken against the hand-written app with the same resources.
BASELINE = {
    "resilient": "l2",
    "l2": "l2",
    "solutions": "l2",
    "resilient-full": "l2-full",
    "l2-full": "l2-full",
    "resilient-payloads": "l2-payloads",
    "l2-payloads": "l2-payloads",
}
FUNCTION_TIMEOUT_S = 30
VISIBILITY_TIMEOUT_S = 6 * FUNCTION_TIMEOUT_S  # what ResilientQueue derives for a 30 s function
PROFILE_FLAG = "BENCH_COUNT_JSII_CALLS"
# With --alarm-actions every alarm of every variant notifies one SNS topic, as a configured app's
# do; without, ResilientQueue also writes its QR024 warning (alarms that notify nobody) per pair.
ALARM_ACTIONS_FLAG = "BENCH_ALARM_ACTIONS"
ALARM_ACTIONS: list[Any] = []  # set in the child process by run_app


# --- the apps (run in the child process; only the variant's own imports) ----------------------


def _function(stack: Any, index: int) -> Any:
    from aws_cdk import Duration
    from aws_cdk import aws_lambda as lambda_

    return lambda_.Function(
        stack,
        f"Worker{index}",
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
        timeout=Duration.seconds(FUNCTION_TIMEOUT_S),
    )


def _alarm(
    scope: Any, construct_id: str, metric: Any, threshold: int, periods: int, actions: bool = True
) -> Any:
    from aws_cdk import aws_cloudwatch as cloudwatch

    alarm = cloudwatch.Alarm(
        scope,
        construct_id,
        metric=metric,
        threshold=threshold,
        evaluation_periods=periods,
        datapoints_to_alarm=periods,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        alarm_name=f"{construct_id}-alarm",
        alarm_description=f"{construct_id}: see the runbook.",
    )
    if ALARM_ACTIONS and actions:
        alarm.add_alarm_action(*ALARM_ACTIONS)
    return alarm


def _gauge(queue: Any, name: str) -> Any:
    from aws_cdk import Duration

    return queue.metric(name, period=Duration.minutes(1), statistic="Maximum")


def build_resilient(stack: Any, index: int) -> None:
    from constructs_lib import ResilientQueue

    queue = ResilientQueue(
        stack, f"Pair{index}", queue_name=f"bench-{index}", alarm_actions=ALARM_ACTIONS
    )
    queue.add_lambda_consumer(_function(stack, index), batch_size=10)


def build_l2(stack: Any, index: int, composite_members: bool = False) -> None:
    from aws_cdk import ArnFormat, Duration
    from aws_cdk import aws_cloudwatch as cloudwatch
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk import aws_lambda_event_sources as event_sources
    from aws_cdk import aws_sqs as sqs

    name = f"bench-{index}"
    # The source ARN is formatted from its name: Fn::GetAtt would make a cycle with the redrive.
    source_arn = stack.format_arn(
        service="sqs", resource=name, arn_format=ArnFormat.NO_RESOURCE_NAME
    )
    dlq = sqs.Queue(
        stack,
        f"Dlq{index}",
        queue_name=f"{name}-dlq",
        retention_period=Duration.days(14),
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        redrive_allow_policy=sqs.RedriveAllowPolicy(
            redrive_permission=sqs.RedrivePermission.BY_QUEUE,
            source_queues=[sqs.Queue.from_queue_arn(stack, f"Source{index}", source_arn)],
        ),
    )
    queue = sqs.Queue(
        stack,
        f"Queue{index}",
        queue_name=name,
        visibility_timeout=Duration.seconds(VISIBILITY_TIMEOUT_S),
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=5),
    )
    event_source = event_sources.SqsEventSource(
        queue,
        batch_size=10,
        report_batch_item_failures=True,
        metrics_config=lambda_.MetricsConfig(metrics=[lambda_.MetricType.EVENT_COUNT]),
    )
    _function(stack, index).add_event_source(event_source)
    failed_messages = cloudwatch.Metric(
        namespace="AWS/Lambda",
        metric_name="FailedInvokeEventCount",
        dimensions_map={"EventSourceMappingUUID": event_source.event_source_mapping_id},
        period=Duration.minutes(1),
        statistic="Sum",
    )
    _alarm(stack, f"FailedMessages{index}", failed_messages, 1, 1)
    _alarm(
        stack, f"InFlight{index}", _gauge(queue, "ApproximateNumberOfMessagesNotVisible"), 12_000, 5
    )
    with_actions = not composite_members  # a composite alarm's members carry none
    _alarm(
        stack,
        f"DeadLetters{index}",
        _gauge(dlq, "ApproximateNumberOfMessagesVisible"),
        1,
        1,
        actions=with_actions,
    )
    _alarm(stack, f"SourceAge{index}", _gauge(queue, "ApproximateAgeOfOldestMessage"), 172_800, 1)
    _alarm(
        stack,
        f"DeadLetterAge{index}",
        _gauge(dlq, "ApproximateAgeOfOldestMessage"),
        432_000,
        1,
        actions=with_actions,
    )


def build_solutions(stack: Any, index: int) -> None:
    from aws_cdk import Duration
    from aws_cdk import aws_lambda_event_sources as event_sources
    from aws_cdk import aws_sqs as sqs
    from aws_solutions_constructs.aws_sqs_lambda import (  # type: ignore[import-not-found]
        SqsToLambda,
    )

    pair = SqsToLambda(
        stack,
        f"Pair{index}",
        existing_lambda_obj=_function(stack, index),
        queue_props=sqs.QueueProps(
            queue_name=f"bench-{index}", visibility_timeout=Duration.seconds(VISIBILITY_TIMEOUT_S)
        ),
        max_receive_count=5,
        sqs_event_source_props=event_sources.SqsEventSourceProps(
            batch_size=10, report_batch_item_failures=True
        ),
    )
    dlq = pair.dead_letter_queue
    assert dlq is not None
    _alarm(
        stack,
        f"InFlight{index}",
        _gauge(pair.sqs_queue, "ApproximateNumberOfMessagesNotVisible"),
        12_000,
        5,
    )
    _alarm(
        stack, f"DeadLetters{index}", _gauge(dlq.queue, "ApproximateNumberOfMessagesVisible"), 1, 1
    )


def build_resilient_full(stack: Any, index: int) -> None:
    from aws_cdk import Duration

    from constructs_lib import ResilientQueue
    from constructs_lib.retry_backoff import RetryBackoff

    queue = ResilientQueue(
        stack,
        f"Pair{index}",
        queue_name=f"bench-{index}",
        critical_actions=ALARM_ACTIONS,
        warning_actions=ALARM_ACTIONS,
        composite_alarm=True,
        expected_traffic=Duration.minutes(15),
        fair=True,
    )
    queue.add_lambda_consumer(_function(stack, index), batch_size=10, retry_backoff=RetryBackoff())


def _failing_every_message(stack: Any, index: int, mapping: Any, actions: bool = False) -> Any:
    """The consumer's metric-math alarm on the share of messages its invocations failed, as
    ``ResilientQueue`` makes it: 99 % or more in each of five minutes."""
    from aws_cdk import Duration
    from aws_cdk import aws_cloudwatch as cloudwatch

    def mapping_metric(name: str) -> Any:
        return cloudwatch.Metric(
            namespace="AWS/Lambda",
            metric_name=name,
            dimensions_map={"EventSourceMappingUUID": mapping.event_source_mapping_id},
            period=Duration.minutes(1),
            statistic="Sum",
        )

    alarm = cloudwatch.Alarm(
        stack,
        f"FailingEveryMessage{index}",
        metric=cloudwatch.MathExpression(
            expression="IF(FILL(invoked, 0) > 0, 100 * FILL(failed, 0) / FILL(invoked, 0), 0)",
            using_metrics={
                "failed": mapping_metric("FailedInvokeEventCount"),
                "invoked": mapping_metric("InvokedEventCount"),
            },
            period=Duration.minutes(1),
        ),
        threshold=99,
        evaluation_periods=5,
        datapoints_to_alarm=5,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        alarm_name=f"bench-{index}-failing-every-message",
        alarm_description="Every message fails: see the runbook.",
    )
    if ALARM_ACTIONS and actions:
        alarm.add_alarm_action(*ALARM_ACTIONS)
    return alarm


def build_l2_full(stack: Any, index: int) -> None:
    """``build_l2`` plus what the options add, written by hand: the silent-producers and
    quiet-groups alarms, the failing-every-message metric-math alarm, a composite alarm over the
    critical ones (which alone carries their actions, its members acknowledging cdk-nag's rule
    for an action on every alarm), the backoff layer (one per stack) and its environment."""
    from aws_cdk import Acknowledgment, Duration, Validations
    from aws_cdk import aws_cloudwatch as cloudwatch
    from aws_cdk import aws_lambda as lambda_

    from constructs_lib import backoff

    build_l2(stack, index, composite_members=True)
    queue = stack.node.find_child(f"Queue{index}")
    function = stack.node.find_child(f"Worker{index}")
    [mapping_id] = [
        c.node.id for c in function.node.children if c.node.id.startswith("SqsEventSource")
    ]
    mapping = function.node.find_child(mapping_id)
    sent = cloudwatch.Alarm(
        stack,
        f"NoMessagesSent{index}",
        metric=queue.metric("NumberOfMessagesSent", period=Duration.minutes(15), statistic="Sum"),
        threshold=1,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
        alarm_name=f"bench-{index}-no-messages-sent",
        alarm_description="No message sent: see the runbook.",
    )
    quiet = _alarm(
        stack,
        f"QuietAge{index}",
        _gauge(queue, "ApproximateAgeOfOldestMessageInQuietGroups"),
        172_800,
        1,
        actions=False,
    )

    every = _failing_every_message(stack, index, mapping)
    dead_letters = stack.node.find_child(f"DeadLetters{index}")
    dead_letter_age = stack.node.find_child(f"DeadLetterAge{index}")
    members = (dead_letters, dead_letter_age, sent, quiet, every)
    for member in members:  # as ResilientQueue: cdk-nag's packs that want an action on each
        Validations.of(member).acknowledge(
            *(
                Acknowledgment(id=rule, reason="A member of a composite alarm with actions.")
                for rule in (
                    "NIST.800.53.R5-CloudWatchAlarmAction",
                    "HIPAA.Security-CloudWatchAlarmAction",
                )
            )
        )
    composite = cloudwatch.CompositeAlarm(
        stack,
        f"Critical{index}",
        composite_alarm_name=f"bench-{index}-critical",
        alarm_rule=cloudwatch.AlarmRule.any_of(
            *(cloudwatch.AlarmRule.from_alarm(a, cloudwatch.AlarmState.ALARM) for a in members)
        ),
    )
    if ALARM_ACTIONS:
        composite.add_alarm_action(*ALARM_ACTIONS)
    layer = stack.node.try_find_child("BackoffLayer") or lambda_.LayerVersion(
        stack,
        "BackoffLayer",
        code=lambda_.Code.from_asset(str(_backoff_layer_directory())),
    )
    function.add_layers(layer)
    settings = backoff.Backoff(max_receive_count=5, retention_seconds=345_600)
    for name, value in settings.to_environment().items():
        function.add_environment(name, value)


def build_resilient_payloads(stack: Any, index: int) -> None:
    from constructs_lib import LargePayloads, ResilientQueue

    queue = ResilientQueue(
        stack,
        f"Pair{index}",
        queue_name=f"bench-{index}",
        alarm_actions=ALARM_ACTIONS,
        large_payloads=LargePayloads(),
    )
    queue.add_lambda_consumer(_function(stack, index), batch_size=10)
    queue.queue.grant_send_messages(_function(stack, 1000 + index))


def build_l2_payloads(stack: Any, index: int) -> None:
    """``build_l2`` plus what ``large_payloads`` adds, written by hand: the bucket (SSE-S3, TLS
    only, no public access, retained, a lifecycle on the queue's prefix, cdk-nag's bucket rules
    acknowledged), a producer function granted send and PutObject under the prefix, the
    consumer's GetObject and DeleteObject there, both functions' environment, the prefix's
    IAM5 acknowledged on each role, and the consumer's layer (one per stack)."""
    from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Validations
    from aws_cdk import aws_iam as iam
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk import aws_s3 as s3

    build_l2(stack, index)
    name = f"bench-{index}"
    prefix = f"{name}/"
    queue = stack.node.find_child(f"Queue{index}")
    consumer = stack.node.find_child(f"Worker{index}")
    bucket = s3.Bucket(
        stack,
        f"Payloads{index}",
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        lifecycle_rules=[
            s3.LifecycleRule(
                id=f"expire-{name}-payloads",
                prefix=prefix,
                expiration=Duration.days(15),
                abort_incomplete_multipart_upload_after=Duration.days(1),
            )
        ],
        removal_policy=RemovalPolicy.RETAIN,
    )
    for rule in (
        "AwsSolutions::AwsSolutions-S1",
        "NIST.800.53.R5::NIST.800.53.R5-S3BucketLoggingEnabled",
        "HIPAA.Security::HIPAA.Security-S3BucketLoggingEnabled",
        "NIST.800.53.R5::NIST.800.53.R5-S3BucketVersioningEnabled",
        "HIPAA.Security::HIPAA.Security-S3BucketVersioningEnabled",
        "NIST.800.53.R5::NIST.800.53.R5-S3BucketReplicationEnabled",
        "HIPAA.Security::HIPAA.Security-S3BucketReplicationEnabled",
    ):
        Validations.of(bucket).acknowledge(Acknowledgment(id=rule, reason="Payloads expire."))
    producer = _function(stack, 1000 + index)
    queue.grant_send_messages(producer)
    objects = bucket.arn_for_objects(f"{prefix}*")
    tls = {"Bool": {"aws:SecureTransport": "true"}}
    for function, actions in (
        (consumer, ["s3:GetObject", "s3:DeleteObject"]),
        (producer, ["s3:PutObject"]),
    ):
        iam.Grant.add_to_principal_or_resource(
            grantee=function,
            actions=actions,
            resource_arns=[objects],
            resource=bucket,
            conditions=tls,
        )
        logical = stack.get_logical_id(bucket.node.default_child)
        Validations.of(function.role).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions::AwsSolutions-IAM5[Resource::<{logical}.Arn>/{prefix}*]",
                reason="The queue's prefix.",
            )
        )
        function.add_environment("CONSTRUCTS_LIB_PAYLOAD_BUCKET", bucket.bucket_name)
        function.add_environment("CONSTRUCTS_LIB_PAYLOAD_PREFIX", prefix)
    consumer.add_environment("CONSTRUCTS_LIB_PAYLOAD_DELETE", "true")
    layer = stack.node.try_find_child("PayloadsLayer") or lambda_.LayerVersion(
        stack,
        "PayloadsLayer",
        code=lambda_.Code.from_asset(
            str(
                _backoff_layer_directory(
                    ("limits.py", "backoff_batch.py", "time_budget.py", "large_payloads.py")
                )
            )
        ),
    )
    consumer.add_layers(layer)
    # ResilientQueue pages when the consumer fails every message: the same alarm, by hand.
    [mapping_id] = [
        c.node.id for c in consumer.node.children if c.node.id.startswith("SqsEventSource")
    ]
    _failing_every_message(stack, index, consumer.node.find_child(mapping_id), actions=True)


def _backoff_layer_directory(more: tuple[str, ...] = ()) -> Path:
    """The files the layer holds (the backoff's three, and ``more``), staged once per app
    process."""
    target = Path(tempfile.gettempdir()) / f"synth-bench-layer-{os.getpid()}-{len(more)}"
    package = target / "python" / "constructs_lib"
    if not package.exists():
        package.mkdir(parents=True)
        for name in ("__init__.py", "errors.py", "backoff.py", *more):
            (package / name).write_bytes((REPO_ROOT / "constructs_lib" / name).read_bytes())
    return target


BUILDERS: dict[str, Callable[[Any, int], None]] = {
    "resilient": build_resilient,
    "l2": build_l2,
    "solutions": build_solutions,
    "resilient-full": build_resilient_full,
    "l2-full": build_l2_full,
    "resilient-payloads": build_resilient_payloads,
    "l2-payloads": build_l2_payloads,
}


def _count_jsii_calls() -> Counter[str]:
    """Count every request the Python side sends to the jsii Node.js process, by kind."""
    from jsii._kernel.providers import process

    counts: Counter[str] = Counter()
    original = process._NodeProcess.send

    def send(self: Any, request: Any, response_type: Any) -> Any:
        counts[type(request).__name__.removesuffix("Request")] += 1
        return original(self, request, response_type)

    process._NodeProcess.send = send  # type: ignore[method-assign]
    return counts


def run_app(variant: str, pairs: int) -> None:
    counts = _count_jsii_calls() if os.environ.get(PROFILE_FLAG) else None
    import aws_cdk as cdk

    app = cdk.App()
    stack = cdk.Stack(app, "Bench")
    if os.environ.get(ALARM_ACTIONS_FLAG):
        from aws_cdk import aws_cloudwatch_actions as actions
        from aws_cdk import aws_sns as sns

        ALARM_ACTIONS.append(actions.SnsAction(sns.Topic(stack, "OnCall")))
    for index in range(pairs):
        BUILDERS[variant](stack, index)
    app.synth()
    if counts is not None:
        print(f"JSII_CALLS {json.dumps(dict(counts))}", file=sys.stderr)


# --- the harness -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    variant: str
    pairs: int
    wall_s: float
    cpu_s: float
    maxrss_mib: float
    tree_peak_mib: float
    resources: int


def _tree_rss_kib(root: int) -> int:
    """Summed VmRSS of ``root`` and its descendants (Linux /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
        except OSError:
            continue
        pid = int(entry)
        children.setdefault(int(fields["PPid"]), []).append(pid)
        rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0])
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


def _become_subreaper() -> None:
    """Adopt the app's orphaned descendants (Linux prctl PR_SET_CHILD_SUBREAPER) to reap them."""
    import ctypes

    pr_set_child_subreaper = 36
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(pr_set_child_subreaper, 1, 0, 0, 0) != 0:
        print("warning: cannot become a subreaper; orphaned node processes go uncounted")


def _python_for(variant: str) -> str:
    if variant != "solutions":
        return sys.executable
    if not SOLUTIONS_PYTHON.exists():
        sys.exit(
            "The Solutions Constructs peer needs its own virtual environment:\n"
            "  python3 -m venv .bench-venvs/solutions && .bench-venvs/solutions/bin/pip install "
            "--require-hashes -r bench/peers/solutions-constructs.lock\n"
            "or pass --variants resilient l2"
        )
    return str(SOLUTIONS_PYTHON)


# Compiled bytecode for every variant's Python modules, in one private folder (set by main).
PYCACHE_PREFIX: str | None = None


def _child_env(outdir: str, profile: bool) -> dict[str, str]:
    env = {**os.environ, "CDK_OUTDIR": outdir}
    if PYCACHE_PREFIX is not None:
        # aws-cdk-lib's generated modules take seconds to compile: without a bytecode cache every
        # synth pays that, and only for environments installed without compiling (uv's default).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = PYCACHE_PREFIX
    # jsii finds node on PATH: the pinned Node.js of this repository's virtual environment.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
    if profile:
        env[PROFILE_FLAG] = "1"
    return env


def synth_once(variant: str, pairs: int, profile: bool = False) -> tuple[Sample, str]:
    with tempfile.TemporaryDirectory(prefix="synth-bench-") as outdir:
        command = [_python_for(variant), str(Path(__file__).resolve()), "app", variant, str(pairs)]
        started = time.perf_counter()
        child = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=_child_env(outdir, profile),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        peak_kib = 0
        done = threading.Event()

        def sample_tree() -> None:
            nonlocal peak_kib
            while not done.is_set():
                peak_kib = max(peak_kib, _tree_rss_kib(child.pid))
                done.wait(0.01)

        sampler = threading.Thread(target=sample_tree, daemon=True)
        sampler.start()
        assert child.stderr is not None
        stderr = child.stderr.read()  # drains the pipe until the process closes it
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        done.set()
        sampler.join()
        cpu = usage.ru_utime + usage.ru_stime
        maxrss_kib = usage.ru_maxrss
        # A node process the app did not wait for was re-parented to this (subreaper) process:
        # reap it here so that its CPU time and memory count too.
        while True:
            try:
                _, _, orphan = os.wait4(-1, 0)
            except ChildProcessError:
                break
            cpu += orphan.ru_utime + orphan.ru_stime
            maxrss_kib = max(maxrss_kib, orphan.ru_maxrss)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            sys.exit(f"{variant} with {pairs} pairs failed:\n{stderr}")
        template = json.loads((Path(outdir) / "Bench.template.json").read_text())
    sample = Sample(
        variant,
        pairs,
        wall,
        cpu,
        maxrss_kib / 1024,
        peak_kib / 1024,
        len(template["Resources"]),
    )
    return sample, stderr


def _median(values: Sequence[float]) -> float:
    return statistics.median(values)


def benchmark(pairs_list: Sequence[int], variants: Sequence[str], runs: int) -> None:
    print(_machine())
    print(f"{runs} rounds per K; each round synthesizes every variant once, in rotating order.")
    if "solutions" in variants:
        print(
            f"Note: the Solutions Constructs peer runs on aws-cdk-lib {SOLUTIONS_CDK_VERSION} "
            "(its own pin), the others on this repository's aws-cdk-lib."
        )
    print(
        "Bytecode: "
        + (
            "compiled once into a private cache before measuring, for every variant."
            if PYCACHE_PREFIX
            else "as the environment is (no cache prepared)."
        )
    )
    if os.environ.get("CDK_VALIDATION") == "false":
        print(
            "CDK_VALIDATION=false: aws-cdk-lib's built-in CloudFormation validation at synth "
            "is off for every variant (both aws-cdk-lib versions honour the variable)."
        )
    print()
    print(
        "| K | variant | resources | wall s (median) | wall min-max s | wall vs L2 | "
        "CPU s (median) | CPU vs L2 | ru_maxrss MiB | tree peak RSS MiB |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for pairs in pairs_list:
        samples: dict[str, list[Sample]] = {v: [] for v in variants}
        wall_ratios: dict[str, list[float]] = {v: [] for v in variants}
        cpu_ratios: dict[str, list[float]] = {v: [] for v in variants}
        for round_index in range(runs):
            shift = round_index % len(variants)
            this_round: dict[str, Sample] = {}
            for variant in [*variants[shift:], *variants[:shift]]:
                this_round[variant], _ = synth_once(variant, pairs)
                samples[variant].append(this_round[variant])
            for variant, sample in this_round.items():
                base = this_round.get(BASELINE[variant])
                if base is not None:
                    wall_ratios[variant].append(sample.wall_s / base.wall_s)
                    cpu_ratios[variant].append(sample.cpu_s / base.cpu_s)
        for variant in variants:
            runs_of = samples[variant]
            walls = [s.wall_s for s in runs_of]
            print(
                f"| {pairs} | {LABELS[variant]} | {runs_of[0].resources} | {_median(walls):.2f} | "
                f"{min(walls):.2f}-{max(walls):.2f} | {_ratio(wall_ratios[variant])} | "
                f"{_median([s.cpu_s for s in runs_of]):.2f} | {_ratio(cpu_ratios[variant])} | "
                f"{_median([s.maxrss_mib for s in runs_of]):.0f} | "
                f"{_median([s.tree_peak_mib for s in runs_of]):.0f} |",
                flush=True,
            )
    print()
    print(
        "Ratios are medians of per-round ratios (each round runs every variant back to back). "
        "CPU is user + system time of the app process and its waited-for children (jsii's node)."
    )


def _ratio(values: Sequence[float]) -> str:
    return f"{_median(values):.3f}x" if values else "n/a"


def profile(variants: Sequence[str], small: int = 1, large: int = 11) -> None:
    """jsii requests per pair: the difference between two app sizes, divided by the pairs added."""
    print(f"jsii requests per pair ((K={large}) - (K={small})) / {large - small}, by kind:")
    for variant in variants:
        counts: list[dict[str, int]] = []
        for pairs in (small, large):
            _, stderr = synth_once(variant, pairs, profile=True)
            line = next(x for x in stderr.splitlines() if x.startswith("JSII_CALLS "))
            counts.append(json.loads(line.split(" ", 1)[1]))
        kinds = sorted(set(counts[0]) | set(counts[1]))
        per_pair = {k: (counts[1].get(k, 0) - counts[0].get(k, 0)) / (large - small) for k in kinds}
        total = sum(per_pair.values())
        detail = ", ".join(f"{k} {v:.0f}" for k, v in sorted(per_pair.items(), key=lambda i: -i[1]))
        print(
            f"- {LABELS[variant]}: {total:.0f} per pair ({detail}); fixed {sum(counts[0].values())} at K={small}"
        )


def _machine() -> str:
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    node = subprocess.run(
        ["node", "--version"],
        capture_output=True,
        text=True,
        check=False,
        env=_child_env("", False),
    ).stdout.strip()
    return (
        f"Machine: {os.cpu_count()} cores, {memory_gib:.0f} GiB, Python "
        f"{platform.python_version()}, Node.js {node}, {platform.system()} {platform.machine()}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["app"]:
        run_app(args[1], int(args[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--pairs", type=int, nargs="+", default=[1, 10, 40])
    parser.add_argument("--runs", type=int, default=3)
    # The variants with every option are asked for by name: at 40 pairs they pass
    # CloudFormation's 500 resources per stack.
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS[:3]))
    parser.add_argument("--profile", action="store_true", help="count jsii requests per pair")
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="run as the environment is (PYTHONDONTWRITEBYTECODE and missing .pyc files included)",
    )
    parser.add_argument(
        "--alarm-actions",
        action="store_true",
        help="every alarm notifies an SNS topic (no QR024 warning from ResilientQueue)",
    )
    options = parser.parse_args(args)
    if options.alarm_actions:
        os.environ[ALARM_ACTIONS_FLAG] = "1"  # read by the app processes
    _become_subreaper()
    with tempfile.TemporaryDirectory(prefix="synth-bench-pycache-") as prefix:
        global PYCACHE_PREFIX
        if not options.no_bytecode_cache:
            PYCACHE_PREFIX = prefix
            for variant in options.variants:  # warm-up: compiles the bytecode, not measured
                synth_once(variant, 1)
        _run(options)


def _run(options: argparse.Namespace) -> None:
    if options.profile:
        profile(options.variants)
    else:
        benchmark(options.pairs, options.variants, options.runs)


if __name__ == "__main__":
    main()
