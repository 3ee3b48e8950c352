"""The alarm tiers of one ResilientQueue: which actions each tier's alarms carry, the alarms of
each tier as the app adds them, and the optional composite alarm that pages once for all the
critical alarms of the queue's stack.

Critical alarms page (``critical_actions``), warning alarms file a ticket (``warning_actions``);
both default to ``alarm_actions``. With ``composite_alarm`` the critical alarms in the queue's
stack become members of one composite alarm, ``<queue_name>-critical``, which carries the
critical actions while they carry none: one page, not five (CloudWatch user guide, "Composite
alarms": configure the actions at the composite level and create the underlying alarms without
actions, to reduce alarm noise). A critical alarm in another stack (the failing-every-message
alarm of a consumer defined there) keeps its own critical actions: the composite's stack would
have to depend on the consumer's, which already depends on the queue's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import jsii
from aws_cdk import (
    Acknowledgment,
    IResolveContext,
    IStringProducer,
    Lazy,
    Stack,
    Validations,
)
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct, IValidation

from constructs_lib.alarms.alarm import RUNBOOK, AlarmSpec, Tier, create_alarm
from constructs_lib.errors import Problem

if TYPE_CHECKING:
    from constructs_lib.params.settings import QueueSettings

COMPOSITE_ALARM_ID = "CriticalAlarm"
# "The rule expression of a composite alarm can include as many as 100 underlying alarms"
# (CloudWatch API reference, PutCompositeAlarm; user guide, Create_Composite_Alarm).
COMPOSITE_ALARM_MAX_MEMBERS = 100
# PutCompositeAlarm AlarmRule: length 1 to 10,240 characters (CloudWatch API reference).
COMPOSITE_ALARM_RULE_MAX_LENGTH = 10_240
# The cdk-nag rules that want every metric alarm to carry an action; a member of the composite
# carries none by design (the composite carries them).
_ALARM_ACTION_RULES = (
    "NIST.800.53.R5::NIST.800.53.R5-CloudWatchAlarmAction",
    "HIPAA.Security::HIPAA.Security-CloudWatchAlarmAction",
)


@dataclass(frozen=True)
class TierActions:
    """The actions of each tier, as the ResilientQueue was given them."""

    critical: tuple[cloudwatch.IAlarmAction, ...]
    warning: tuple[cloudwatch.IAlarmAction, ...]
    ok: tuple[cloudwatch.IAlarmAction, ...]

    @classmethod
    def given(
        cls,
        alarm_actions: Sequence[cloudwatch.IAlarmAction],
        critical_actions: Sequence[cloudwatch.IAlarmAction] | None,
        warning_actions: Sequence[cloudwatch.IAlarmAction] | None,
        ok_actions: Sequence[cloudwatch.IAlarmAction],
    ) -> TierActions:
        """Each tier's own actions, or ``alarm_actions`` for a tier not given (None)."""
        return cls(
            critical=tuple(alarm_actions if critical_actions is None else critical_actions),
            warning=tuple(alarm_actions if warning_actions is None else warning_actions),
            ok=tuple(ok_actions),
        )

    def of(self, tier: Tier) -> tuple[cloudwatch.IAlarmAction, ...]:
        return self.critical if tier is Tier.CRITICAL else self.warning


class AlarmTiers:
    """Every alarm of one ResilientQueue by tier, made through ``create`` so that each carries
    its tier's actions, or none as a member of the composite alarm (``composite_alarm``)."""

    def __init__(
        self, scope: Construct, queue_name: str, actions: TierActions, composite: bool
    ) -> None:
        self.scope = scope
        self.queue_name = queue_name
        self.actions = actions
        self._alarms: dict[Tier, list[cloudwatch.Alarm]] = {tier: [] for tier in Tier}
        self._members: list[cloudwatch.Alarm] = []
        self._names: list[str] = []
        self.composite_alarm: cloudwatch.CompositeAlarm | None = (
            self._composite(queue_name) if composite else None
        )
        """``<queue_name>-critical``: ALARM when any critical alarm of the queue's stack is;
        None without ``composite_alarm``."""

    @classmethod
    def of_queue(cls, scope: Construct, queue_name: str, settings: QueueSettings) -> AlarmTiers:
        """The tiers of a ``ResilientQueue(...)`` call, from its ``settings``."""
        actions = TierActions.given(
            settings.alarm_actions,
            settings.critical_actions,
            settings.warning_actions,
            settings.ok_actions,
        )
        return cls(scope, queue_name, actions, settings.composite_alarm)

    def create(self, spec: AlarmSpec, scope: Construct | None = None) -> cloudwatch.Alarm:
        """The alarm of ``spec`` in ``scope`` (default: the queue's), with its tier's actions,
        or without actions as a member of the composite alarm."""
        scope = scope or self.scope
        member = self._joins_composite(spec.tier, scope)
        if member:
            alarm = create_alarm(scope, spec, (), ())
            self._members.append(alarm)
            self._names.append(spec.alarm_name)
            reason = (
                f"A member of the composite alarm {self.queue_name}-critical, which carries "
                "the critical actions: its members carry none, so that on-call gets one page, "
                "not one per alarm."
            )
            Validations.of(alarm).acknowledge(
                *(Acknowledgment(id=rule, reason=reason) for rule in _ALARM_ACTION_RULES)
            )
            assert self.composite_alarm is not None
            self.composite_alarm.node.add_dependency(alarm)
        else:
            alarm = create_alarm(scope, spec, self.actions.of(spec.tier), self.actions.ok)
        self._alarms[spec.tier].append(alarm)
        return alarm

    def by_tier(self) -> dict[Tier, list[cloudwatch.Alarm]]:
        """The metric alarms of each tier, in the order they were made (not the composite)."""
        return {tier: list(alarms) for tier, alarms in self._alarms.items()}

    @property
    def members(self) -> list[cloudwatch.Alarm]:
        """The critical alarms the composite alarm watches (empty without one)."""
        return list(self._members)

    def _joins_composite(self, tier: Tier, scope: Construct) -> bool:
        """A critical alarm of the queue's stack, with a composite alarm to join."""
        return (
            self.composite_alarm is not None
            and tier is Tier.CRITICAL
            and (scope is self.scope or Stack.of(scope) is Stack.of(self.scope))
        )

    def _composite(self, queue_name: str) -> cloudwatch.CompositeAlarm:
        """The composite alarm, its rule rendered at synth: members come with consumers added
        after the queue."""
        composite = cloudwatch.CompositeAlarm(
            self.scope,
            COMPOSITE_ALARM_ID,
            composite_alarm_name=f"{queue_name}-critical",
            alarm_description=(
                f"{Tier.CRITICAL.heading} — a critical alarm of {queue_name} fired: dead letters "
                "are arriving, messages are about to expire, SNS cannot deliver to the queue, or "
                "a consumer fails every message. The member alarm in ALARM says which and what "
                f"to do (aws cloudwatch describe-alarms --children-of-alarm-name). {RUNBOOK}"
            ),
            # Alarm names, not ARNs: known at synth, so the rule's length can be checked; the
            # dependencies on the members are added as they join.
            alarm_rule=cloudwatch.AlarmRule.from_string(
                Lazy.uncached_string(_RuleOfMembers(self._member_names))
            ),
        )
        if self.actions.critical:
            composite.add_alarm_action(*self.actions.critical)
        if self.actions.ok:
            composite.add_ok_action(*self.actions.ok)
        composite.node.add_validation(_CompositeRuleLimits(self._member_names))
        return composite

    def _member_names(self) -> list[str]:
        # Kept in Python as the members join: read back through jsii at every resolve of the
        # rule, the names cost more than the rest of the alarms' synth.
        return list(self._names)


_TOKEN_MARK = "${Token["


def any_of(alarm_names: Sequence[str]) -> str:
    """A composite alarm rule: ALARM when any of the named alarms is."""
    return " OR ".join(f'ALARM("{name}")' for name in alarm_names)


def composite_rule_problems(alarm_names: Sequence[str]) -> list[Problem]:
    """What CloudWatch would refuse in the rule over ``alarm_names``: too many members, or a rule
    too long. A name that is a token has no length yet and is not counted."""
    problems = []
    if len(alarm_names) > COMPOSITE_ALARM_MAX_MEMBERS:
        problems.append(
            Problem(
                "composite_alarm",
                True,
                f"would watch {len(alarm_names)} critical alarms; a composite alarm's rule may "
                f"include at most {COMPOSITE_ALARM_MAX_MEMBERS}",
                "leave composite_alarm off for this queue, or split its consumers over queues",
            )
        )
    # CDK encodes a string token as "${Token[...]}"; asked of jsii, this costs a call per name
    # at every synth of every queue.
    known = [name for name in alarm_names if _TOKEN_MARK not in name]
    length = len(any_of(known))
    if length > COMPOSITE_ALARM_RULE_MAX_LENGTH:
        problems.append(
            Problem(
                "composite_alarm",
                True,
                f"would have a rule of {length} characters; CloudWatch allows at most "
                f"{COMPOSITE_ALARM_RULE_MAX_LENGTH}",
                "give the queue a shorter queue_name or its consumers shorter construct ids, or "
                "leave composite_alarm off",
            )
        )
    return problems


@jsii.implements(IStringProducer)
class _RuleOfMembers:
    """The composite alarm's rule, produced from the members known when it is resolved (at
    synth; uncached, so that resolving it earlier does not freeze it)."""

    def __init__(self, member_names: Callable[[], list[str]]) -> None:
        self.member_names = member_names

    def produce(self, context: IResolveContext) -> str:
        return any_of(self.member_names())


@jsii.implements(IValidation)
class _CompositeRuleLimits:
    """At synth, once every consumer came: the composite alarm's rule within CloudWatch's
    limits."""

    def __init__(self, member_names: Callable[[], list[str]]) -> None:
        self.member_names = member_names

    def validate(self) -> list[str]:
        names = self.member_names()
        return [problem.describe() for problem in composite_rule_problems(names)]
