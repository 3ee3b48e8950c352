"""Event source mappings on a ResilientQueue's source queue that did not come through
``add_lambda_consumer`` (``fn.add_event_source(SqsEventSource(orders.queue))``, or
``lambda_.EventSourceMapping`` directly, in any stack of the app): at synth they are consumers
too. The source's visibility timeout is derived from them when their function's timeout is
known; otherwise, or when an explicit ``visibility_timeout`` is below what they need, the synth
fails with the fix (``add_lambda_consumer``), instead of CloudFormation rejecting the mapping
at deploy.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import jsii
from aws_cdk import Aspects, IAspect, Stack, Token
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import IConstruct

from constructs_lib import limits, policy
from constructs_lib.errors import ConfigurationError, Problem


@dataclass(frozen=True)
class BypassingMapping:
    """A mapping on the source queue, with what it needs of the queue (None: unknown)."""

    mapping: lambda_.CfnEventSourceMapping
    function: lambda_.Function | None
    needed: int | None


@jsii.implements(IAspect)
class BypassingConsumers:
    """Finds, at synth, the mappings on ``queue`` that ``own_mappings`` (the jsii references of
    the construct's own consumers' mappings) does not list, and makes the queue's visibility
    timeout cover them."""

    def __init__(
        self,
        path: str,
        queue: sqs.Queue,
        cfn_queue: sqs.CfnQueue,
        own_mappings: Callable[[], frozenset[str]],
        visibility: Callable[[], int],
        explicit: int | None,
    ) -> None:
        self.path = path
        self.queue = queue
        self.cfn_queue = cfn_queue
        self.own_mappings = own_mappings
        self.visibility = visibility
        self.explicit = explicit
        self.found: list[BypassingMapping] = []

    @classmethod
    def watch(cls, leaf: IConstruct, check: BypassingConsumers) -> None:
        # On a construct without children: one visit per synth (see WarningReporter).
        Aspects.of(leaf).add(check)

    def visit(self, node: IConstruct) -> None:
        if not isinstance(node, sqs.CfnQueue):
            return
        self.found = self._bypassing()
        if not self.found:
            return
        problems = [self._problem(b) for b in self.found if b.needed is None]
        needed = max((b.needed for b in self.found if b.needed is not None), default=0)
        if not problems and needed > limits.VISIBILITY_TIMEOUT_MAX:
            problems = policy.visibility_problems(needed, None)
        if not problems and self.explicit is not None and self.explicit < needed:
            problems.append(
                Problem(
                    "visibility_timeout",
                    self.explicit,
                    f"is below the {needed} s that an event source mapping added outside "
                    "add_lambda_consumer needs (6 x function timeout + batching window)",
                    "attach the function with add_lambda_consumer (it derives the timeout and "
                    "checks the batching), or raise visibility_timeout",
                )
            )
        if problems:
            raise ConfigurationError(self.path, problems)
        if self.explicit is None and needed > self.visibility():
            self.cfn_queue.visibility_timeout = needed

    def _bypassing(self) -> list[BypassingMapping]:
        queue_arn = self.queue.queue_arn
        stack = Stack.of(self.queue)
        mappings = AppMappings.of(self.queue.node.root)
        own = self.own_mappings()
        found = []
        for mapping in mappings.reading(queue_arn, stack):
            if jsii_reference(mapping) in own:
                continue
            function = mappings.function(mapping.function_name)
            found.append(BypassingMapping(mapping, function, _needed(mapping, function)))
        return found

    def _problem(self, bypass: BypassingMapping) -> Problem:
        return Problem(
            "event source mapping",
            bypass.mapping.node.path,
            "reads this queue without add_lambda_consumer, and its function's timeout cannot be "
            "read (an imported function, alias or version, or a token), so the queue's "
            "visibility timeout cannot be derived; CloudFormation rejects a mapping whose "
            "function timeout exceeds it",
            "attach the function with add_lambda_consumer(fn, function_timeout=Duration."
            "seconds(N)) instead of add_event_source or lambda_.EventSourceMapping",
        )


class AppMappings:
    """The event source mappings of an app, by the queue ARN they read, read once per state of
    the app's tree: each ResilientQueue's check looks its own queue up here. Walking the app
    and reading every mapping and function once per queue made synth quadratic in the number
    of queues (each read is a call into CDK's Node.js process)."""

    # By the app's root: the index and the tree it was read from (the jsii references of
    # every construct: a construct added or removed, by any aspect or between synths, reads
    # the app again).
    _cache: ClassVar[weakref.WeakKeyDictionary[IConstruct, AppMappings]] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self, tree: tuple[str, ...], constructs: list[IConstruct]) -> None:
        self.tree = tree
        self._constructs = constructs
        self._by_arn: dict[str, list[lambda_.CfnEventSourceMapping]] = {}
        self._by_resolved: dict[tuple[str, str], list[lambda_.CfnEventSourceMapping]] = {}
        for construct in constructs:
            if isinstance(construct, lambda_.CfnEventSourceMapping):
                arn = construct.event_source_arn
                if arn is None:  # a self-managed Kafka source: no queue
                    continue
                self._by_arn.setdefault(arn, []).append(construct)
                stack = Stack.of(construct)
                self._by_resolved.setdefault(_resolved(stack, arn), []).append(construct)
        self._functions: dict[str, lambda_.Function] | None = None

    @classmethod
    def of(cls, root: IConstruct) -> AppMappings:
        constructs = root.node.find_all()
        tree = tuple(jsii_reference(c) for c in constructs)
        cached = cls._cache.get(root)
        if cached is None or cached.tree != tree:
            cached = cls._cache[root] = cls(tree, constructs)
        return cached

    def reading(self, queue_arn: str, stack: Stack) -> list[lambda_.CfnEventSourceMapping]:
        """The mappings whose event source is ``queue_arn``: the same token (in any stack), or
        a value that resolves to the same ARN in the queue's stack."""
        same = list(self._by_arn.get(queue_arn, ()))
        for mapping in self._by_resolved.get(_resolved(stack, queue_arn), ()):
            if not any(mapping is m for m in same):
                same.append(mapping)
        return same

    def function(self, name: str) -> lambda_.Function | None:
        """The function of the app whose name or ARN is ``name`` (a mapping's function_name)."""
        if self._functions is None:
            self._functions = {}
            for construct in self._constructs:
                if isinstance(construct, lambda_.Function):
                    self._functions[construct.function_name] = construct
                    self._functions[construct.function_arn] = construct
        return self._functions.get(name)


def jsii_reference(construct: IConstruct) -> str:
    # The Python objects CDK returns for the same construct differ from call to call; the
    # jsii reference names the construct itself.
    return str(construct.__jsii_ref__.ref)  # type: ignore[attr-defined]


def _resolved(stack: Stack, arn: str) -> tuple[str, str]:
    return jsii_reference(stack), json.dumps(stack.resolve(arn), sort_keys=True)


def _needed(
    mapping: lambda_.CfnEventSourceMapping, function: lambda_.Function | None
) -> int | None:
    """6 x function timeout + batching window, or None when the timeout cannot be read."""
    if function is None:
        return None
    timeout = function.timeout
    seconds = limits.FUNCTION_TIMEOUT_DEFAULT if timeout is None else timeout.to_seconds()
    if Token.is_unresolved(seconds):
        return None
    window = mapping.maximum_batching_window_in_seconds
    if window is not None and Token.is_unresolved(window):
        return None
    return policy.derived_visibility_timeout(int(seconds), int(window or 0))
