"""What a ResilientQueue does for what sends into it: ``add_producer`` (an SNS topic, an
EventBridge rule or an S3 bucket sends to the source queue) and ``grant_redrive`` (an operator
moves dead letters back). ``Producers`` is the collaborator the construct holds and delegates
those calls to: it reports the rules of each call (``constructs_lib.producers.problems``) and
hands over to the wiring (``constructs_lib.producers.wiring``, ``constructs_lib.queue.redrive``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct

from constructs_lib.alarms.factory import AlarmFactory
from constructs_lib.params import prop_tables
from constructs_lib.producers.problems import producer_problems
from constructs_lib.producers.sns_delivery_failures import (
    SNS_DELIVERY_FAILURES_ALARM_ID,
    SnsDeliveryFailures,
    create_delivery_failures_queue,
)
from constructs_lib.producers.wiring import wire_producer
from constructs_lib.queue import payload_grants, redrive
from constructs_lib.queue.pair import QueuePair
from constructs_lib.synth.deferred import WarningReporter

if TYPE_CHECKING:
    from constructs_lib.params.settings import ProducerCall, QueueSettings


class Producers:
    """The producers of one ResilientQueue's source queue (``pair.queue``, in ``scope``): the
    rules of each ``add_producer`` call, its wiring, the SNS delivery-failures queue the first
    topic creates, and the redrive grants."""

    def __init__(
        self,
        scope: Construct,
        pair: QueuePair,
        alarms: AlarmFactory,
        reporter: WarningReporter,
        settings: QueueSettings,
    ) -> None:
        self.scope = scope
        self.pair = pair
        self._alarms = alarms
        self._reporter = reporter
        # The delivery-failures queue keeps the DLQ's retention and the source's message size.
        self._dead_letter_retention = settings.dead_letter_retention
        self._max_message_size = settings.message_size_bytes
        self.sns_delivery_failures: SnsDeliveryFailures | None = None

    def add(self, call: ProducerCall) -> sns.Subscription | events.IRuleTarget | None:
        """Report every problem of one ``add_producer`` call (errors raise), then wire it."""
        self._reporter.report([], producer_problems(self.scope, self.pair, call))
        return wire_producer(self.scope, self.pair, self.delivery_failures, call)

    def grant_redrive(self, grantee: iam.IGrantable) -> iam.Grant:
        """``ResilientQueue.grant_redrive``: the grantee's kind checked, then the grants."""
        scope = self.scope
        prop_tables.REDRIVE.check_kinds(lambda: scope.node.path, {"grantee": grantee})
        grant = redrive.grant_redrive(scope, self.pair.queue, self.pair.dead_letter_queue, grantee)
        store = self.pair.payloads
        if store is None:
            return grant
        # The operator reads what the dead letters point to before moving them back.
        payloads = payload_grants.grant_read(store, grantee, False, scope)
        return grant if not grant.success else grant.combine(payloads)

    def delivery_failures(self) -> SnsDeliveryFailures:
        """The SNS delivery-failures queue, created with the first topic: the source's type,
        key, message size and removal policy, the dead-letter queue's retention, TLS enforced,
        and an alarm at one visible message."""
        if self.sns_delivery_failures is None:
            failures = create_delivery_failures_queue(
                self.scope, self.pair, self._dead_letter_retention, self._max_message_size
            )
            alarm = self._alarms.sns_delivery_failures(SNS_DELIVERY_FAILURES_ALARM_ID, failures)
            self.sns_delivery_failures = SnsDeliveryFailures(failures, alarm)
        return self.sns_delivery_failures
