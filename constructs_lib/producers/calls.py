"""The calls of a ResilientQueue for what sends into it: ``add_producer`` (an SNS topic, an
EventBridge rule or an S3 bucket sends to the source queue) and ``grant_redrive`` (an operator
moves dead letters back). They check their arguments' kinds and hand over to
``constructs_lib.producers.services`` and ``constructs_lib.queue.redrive``, which hold the rules and the wiring."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs

from constructs_lib.params import prop_tables
from constructs_lib.producers import services as producers
from constructs_lib.producers.sns_delivery_failures import SnsDeliveryFailures
from constructs_lib.queue import redrive
from constructs_lib.synth.deferred import WarningReporter


class ProducerCalls:
    """The producers' entry points of ``ResilientQueue``, which sets the attributes below."""

    queue: sqs.Queue
    dead_letter_queue: sqs.IQueue
    _producers: producers.Producers
    _reporter: WarningReporter

    @property
    def sns_delivery_failures(self) -> SnsDeliveryFailures | None:
        """What SNS could not deliver to the source queue: a queue and its depth alarm, created
        by the first ``add_producer`` of a topic (docs/kms.md). None without a topic."""
        return self._producers.sns_delivery_failures

    def grant_redrive(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` move dead letters back to the source with ``StartMessageMoveTask``,
        and list and cancel move tasks.

        On the DLQ: start, list and cancel move tasks, receive, delete and get attributes; on
        the source: send and get attributes; with customer KMS keys, ``kms:Decrypt`` on the
        DLQ's key and ``kms:GenerateDataKey`` and ``kms:Decrypt`` on the source's (one
        statement when they are the same key), each bound to SQS with ``kms:ViaService``
        (``sqs.<region>.amazonaws.com``): the grantee cannot use the key outside SQS. Every
        statement names exactly these queues and keys; a principal of another account is also
        named in the key policy, with the same condition. A ``dead_letter_queue`` you gave
        contributes its ``encryption_master_key``; if it was imported without one, a warning
        gives the key statement to add. The AWS managed key ``alias/aws/sqs`` needs no grant:
        its policy admits the account's principals.

        A statement this app cannot attach (an imported queue's or key's policy, for a
        principal of another account) is a warning that holds the statement as JSON, and the
        returned grant's ``success`` is then False.

        :param grantee: a role, user, group or function (``iam.IGrantable``), usually the
            operator's role or the redrive tool's.
        :returns: the combined grant (``iam.Grant``), for dependencies; ``success`` False when a
            statement could not be attached (see the warnings).
        """
        scope = self._producers.scope
        prop_tables.REDRIVE.check_kinds(lambda: scope.node.path, {"grantee": grantee})
        return redrive.grant_redrive(scope, self.queue, self.dead_letter_queue, grantee)

    def add_producer(
        self,
        source: sns.ITopic | events.IRule | s3.IBucket,
        *,
        s3_events: Sequence[s3.EventType] = producers.DEFAULT_S3_EVENTS,
        s3_filters: Sequence[s3.NotificationKeyFilter] = (),
        raw_message_delivery: bool = False,
        message_group_id: str | None = None,
    ) -> sns.Subscription | events.IRuleTarget | None:
        """Let an SNS topic, an EventBridge rule or an S3 bucket send to the source queue.

        Wires the subscription, rule target or bucket notifications, with a queue policy
        statement for the service that only this source satisfies (``aws:SourceArn``) and, with
        a customer KMS key, a key policy statement for ``kms:GenerateDataKey`` and
        ``kms:Decrypt`` bound to the source (``aws:SourceArn``, and ``aws:SourceAccount`` for a
        bucket or rule). The first topic also creates the queue that holds what SNS cannot
        deliver (``sns_delivery_failures``: the source's type, key and message size, the DLQ's
        retention, and a depth alarm), kept apart from the DLQ. See docs/kms.md for what CDK
        writes and what this adds or narrows.

        Errors (``ConfigurationError``): a queue encrypted with the AWS managed key
        ``alias/aws/sqs`` (those services could never encrypt for it); a FIFO queue with a
        bucket (S3 cannot notify FIFO queues), with a standard topic, or with a rule but no
        ``message_group_id`` or no content-based deduplication; an imported rule; a rule or
        bucket in another stack; a topic or rule added twice; an argument for another kind of
        source. Warnings: a customer key whose policy this app cannot change (imported; the
        warning holds the statement to add, as JSON), and an
        SNS key statement left unscoped because the app's feature flag
        ``@aws-cdk/aws-sns-subscriptions:restrictSqsDescryption`` is off.

        :param source: the producer: an ``sns.ITopic``, an ``events.Rule`` defined in this app,
            or an ``s3.IBucket``.
        :param s3_events: S3 only: the events to notify, one notification each. Default:
            ``s3.EventType.OBJECT_CREATED``.
        :param s3_filters: S3 only: key filters (``s3.NotificationKeyFilter``) for every event.
            Default: every object.
        :param raw_message_delivery: SNS only: deliver the message body without SNS's JSON
            envelope. Default: off.
        :param message_group_id: EventBridge only: the message group of the events; required
            for a FIFO queue. Default: none.
        :returns: the ``sns.Subscription`` for a topic, the ``events.IRuleTarget`` added to
            the rule, ``None`` for a bucket.
        """
        arguments: dict[str, Any] = {
            "source": source,
            "s3_events": s3_events,
            "s3_filters": s3_filters,
            "raw_message_delivery": raw_message_delivery,
            "message_group_id": message_group_id,
        }
        prop_tables.PRODUCER.check_kinds(lambda: self._producers.scope.node.path, arguments)
        self._reporter.report([], self._producers.problems(**arguments))
        return self._producers.add(**arguments)
