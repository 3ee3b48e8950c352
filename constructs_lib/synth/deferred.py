"""What a ResilientQueue decides at synth rather than when it is called: the warnings that are
audit findings (a suppression of the rule, added anywhere in the app, turns them into infos),
the checks of a consumer function that depend on every queue feeding it, and whether a failing
message reaches the dead-letter queue before it expires with the visibility timeout as deployed.

Each is an aspect or a validation on the construct it concerns; none needs the ResilientQueue
itself, only the scope, the resources a finding names and the numbers it judges.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence

import jsii
from aws_cdk import Annotations, Aspects, IAspect, Token
from aws_cdk import aws_lambda as lambda_
from constructs import IConstruct, IValidation

from constructs_lib import limits, policy
from constructs_lib.consumer import LambdaConsumer
from constructs_lib.errors import ConfigurationError, Problem
from constructs_lib.params import combinations
from constructs_lib.policy.suppression_terms import MIN_REASON_LENGTH
from constructs_lib.synth import acknowledgments

WARNING_PREFIX = "constructs_lib"
# The warnings (by prop) that are the same fault as an audit rule (docs/audit/rules.md):
# a suppression of the rule that the audit would honour turns the warning into an info.
AUDIT_RULE_OF_WARNING = {
    "alarm_actions": "QR024",
    "critical_actions": "QR024",
    "warning_actions": "QR024",
    "max_receive_count": "QR008",
    "event_source_metrics": "QR015",
    "reserved_concurrent_executions": "QR017",
    "filters": "QR019",
    "batch_size": "QR022",
    "recursive_loop": "QR028",
}
# The rules whose findings name a consumer's event source mapping (the rest: the alarms, QR024;
# the source queue, QR008; the function, QR017 and QR028).
_MAPPING_RULES = frozenset({"QR015", "QR019", "QR022"})

# The consumers of one ResilientQueue, by the physical name of the queue they read: the source
# queue's, then the dead-letter queue's. The lists grow as consumers are added.
QueueFeeds = Sequence[tuple[str, Sequence[LambdaConsumer]]]


@dataclasses.dataclass(frozen=True)
class SuppressibleWarning:
    """A warning that is the audit's finding ``rule_id`` on the resources ``judged`` returns:
    at synth it becomes an info when the rule is suppressed there (``acknowledgments.find``)."""

    scope: IConstruct  # where the annotation goes
    prop: str
    message: str
    rule_id: str
    judged: Callable[[], list[IConstruct]] = dataclasses.field(compare=False)

    def decide(self) -> None:
        verdict = acknowledgments.find(self.rule_id, self.judged())
        warning_id = f"{WARNING_PREFIX}:{self.prop}"
        annotations = Annotations.of(self.scope)
        for why in verdict.ignored:
            annotations.add_warning_v2(
                f"{WARNING_PREFIX}:suppression",
                f"{why}: not honoured, so the warning {warning_id} stands. Fix: give the "
                f"suppression a reason of at least {MIN_REASON_LENGTH} characters",
            )
        accepted = verdict.honoured
        if accepted is None:
            annotations.add_warning_v2(warning_id, self.message)
        else:
            annotations.add_info_v2(
                warning_id,
                f"{self.prop}: warning suppressed, {accepted.rule_id} {accepted.where}: "
                f"{accepted.reason} (the warning: {self.message})",
            )


class WarningReporter:
    """The problems of one ResilientQueue's calls: errors raised at once, warnings annotated on
    ``scope``; a warning that is an audit finding waits for synth, when suppressions are known.

    ``alarms`` and ``source_queue`` return what QR024 and QR008 name, as the app has them then.
    """

    def __init__(
        self,
        scope: IConstruct,
        alarms: Callable[[], Iterable[IConstruct]],
        source_queue: Callable[[], IConstruct],
    ) -> None:
        self.scope = scope
        self._alarms = alarms
        self._source_queue = source_queue
        self._pending: list[SuppressibleWarning] = []
        self._decided = False

    def decide_at_synth(self, leaf: IConstruct) -> None:
        """Decide the pending warnings when the synth's aspects reach ``leaf``, a construct
        under ``scope`` without children: an aspect visits every construct below the one it is
        added to, and each visit is a call from CDK into Python."""
        Aspects.of(leaf).add(_DecideWarnings(self, leaf))

    def warn(self, warning_id: str, message: str) -> None:
        Annotations.of(self.scope).add_warning_v2(f"{WARNING_PREFIX}:{warning_id}", message)

    def report(
        self,
        unresolved: Sequence[str],
        problems: Sequence[Problem],
        mapping: Callable[[], IConstruct | None] | None = None,
    ) -> None:
        """Warn about the tokens not judged; raise the errors at once, else warn the rest.
        A warning that is an audit finding waits for synth, when suppressions are known;
        ``mapping`` finds the consumer's event source mapping, which its findings name."""
        for prop in unresolved:
            self.warn(*combinations.unresolved_warning(prop))
        errors = [p for p in problems if p.severity == "error"]
        if errors:
            raise ConfigurationError(self.scope.node.path, errors)
        for problem in problems:
            rule_id = AUDIT_RULE_OF_WARNING.get(problem.prop)
            if rule_id is None or problem.severity != "warning":
                self.warn(problem.prop, problem.describe())
                continue
            pending = SuppressibleWarning(
                self.scope,
                problem.prop,
                problem.describe(),
                rule_id,
                self._judged_resources(rule_id, mapping),
            )
            if self._decided:  # reported after the synth's aspects ran
                pending.decide()
            elif pending not in self._pending:
                self._pending.append(pending)

    def _judged_resources(
        self, rule_id: str, mapping: Callable[[], IConstruct | None] | None
    ) -> Callable[[], list[IConstruct]]:
        """The resources the audit's finding of ``rule_id`` names, as the app has them at synth."""
        if rule_id == "QR024":  # each alarm on the queues' metrics
            return lambda: list(self._alarms())
        if rule_id in _MAPPING_RULES and mapping is not None:
            return lambda: [found] if (found := mapping()) is not None else [self.scope]
        return lambda: [self._source_queue()]  # QR008

    def decide(self) -> None:
        self._decided = True
        for pending in self._pending:
            pending.decide()
        self._pending.clear()


@jsii.implements(IAspect)
class _DecideWarnings:
    """At synth, after the app has added its suppressions: a ResilientQueue's warnings that
    are audit findings, each a warning or, suppressed, an info."""

    def __init__(self, reporter: WarningReporter, leaf: IConstruct) -> None:
        self.reporter = reporter
        self.leaf = leaf

    def visit(self, node: IConstruct) -> None:
        # Only the leaf is visited; CDK hands a construct made by CDK itself to Python as a new
        # proxy each time, so the check is by kind, not identity.
        if isinstance(node, type(self.leaf)):
            self.reporter.decide()


def underlying_function(function: object) -> lambda_.Function | None:
    """The function defined in this app behind a function, alias or version; None when the app
    only imports it (its settings cannot be read)."""
    if isinstance(function, lambda_.Function):
        return function
    if isinstance(function, lambda_.Alias):
        return underlying_function(function.version)
    if isinstance(function, lambda_.Version):
        return underlying_function(function.lambda_)
    return None


@jsii.implements(IAspect)
class FunctionChecks:
    """Checks of one consumer function that depend on the whole app, run at synth so that the
    order of the calls does not matter: its reserved concurrency against every ResilientQueue
    feeding it (several queues can feed one function), and its RecursiveLoop setting."""

    def __init__(self, function: lambda_.Function, cfn: lambda_.CfnFunction) -> None:
        self.function = function
        self.cfn = cfn
        self.queues: list[QueueFeeds] = []

    @classmethod
    def watch(cls, consumer: lambda_.IFunction, feeds: QueueFeeds) -> None:
        """Check ``consumer``'s function at synth, fed by the queues of ``feeds`` (among others).

        The aspect goes on the function's resource, which has no children: on the function it
        would visit each of its constructs, each visit a call from CDK into Python."""
        function = underlying_function(consumer)
        if function is None:
            return
        cfn = function.node.default_child
        if not isinstance(cfn, lambda_.CfnFunction):
            return
        check = next((a for a in Aspects.of(cfn).all if isinstance(a, FunctionChecks)), None)
        if check is None:
            check = cls(function, cfn)
            Aspects.of(cfn).add(check)
        if not any(known[0][1] is feeds[0][1] for known in check.queues):
            check.queues.append(feeds)

    def visit(self, node: IConstruct) -> None:
        # Only the function's resource is visited (a new proxy of it: compared by kind).
        if not isinstance(node, lambda_.CfnFunction):
            return
        cfn = self.cfn
        problems: list[Problem] = []
        if cfn.recursive_loop == limits.RECURSIVE_LOOP_ALLOW:
            problems.append(
                Problem(
                    "recursive_loop",
                    cfn.recursive_loop,
                    "lets the function run in a loop without end when it sends to a queue that "
                    "invokes it again; Lambda's default, Terminate, stops such loops",
                    "remove recursive_loop (or set lambda_.RecursiveLoop.TERMINATE) unless the "
                    "loop is intended and bounded",
                    severity="warning",
                )
            )
        reserved = cfn.reserved_concurrent_executions
        if isinstance(reserved, (int, float)) and not Token.is_unresolved(reserved):
            problems += policy.reserved_concurrency_problems(int(reserved), self._ceilings())
        for problem in problems:
            rule_id = AUDIT_RULE_OF_WARNING.get(problem.prop)
            if rule_id is None:
                Annotations.of(self.function).add_warning_v2(
                    f"{WARNING_PREFIX}:{problem.prop}", problem.describe()
                )
            else:
                SuppressibleWarning(
                    self.function, problem.prop, problem.describe(), rule_id, self._judged
                ).decide()

    def _judged(self) -> list[IConstruct]:
        """What QR017 and QR028 name: the function."""
        return [self.function]

    def _ceilings(self) -> dict[str, int | None]:
        """Each queue feeding the function, by physical name, with its concurrency cap (None:
        uncapped, so it scales up to Lambda's on-demand limit)."""
        ceilings: dict[str, int | None] = {}
        for feeds in self.queues:
            for name, consumers in feeds:
                for consumer in consumers:
                    if underlying_function(consumer.function) is not self.function:
                        continue
                    ceiling = consumer.settings.concurrency_ceiling
                    known = ceilings.get(name, 0)
                    if ceiling is None or known is None:
                        ceilings[name] = None
                    else:
                        ceilings[name] = known + ceiling
        return ceilings


@jsii.implements(IValidation)
class DeliveryBeforeExpiry:
    """At synth: a failing message must reach the DLQ before the source's retention deletes it,
    with the visibility timeout as deployed (SQS's default of 30 s when no consumer came)."""

    def __init__(
        self,
        max_receive_count: int,
        source_retention: int | None,
        visibility_timeout: Callable[[], int],
    ) -> None:
        self.max_receive_count = max_receive_count
        self.source_retention = source_retention
        self.visibility_timeout = visibility_timeout

    def validate(self) -> list[str]:
        problems = policy.expiry_before_dead_letter_problems(
            self.max_receive_count, self.visibility_timeout(), self.source_retention
        )
        return [problem.describe() for problem in problems]
