"""Taking over deployed queues in place: ``ExistingQueues`` says what is deployed (physical
names, type, logical ids), and a ResilientQueue given one builds the same resources under the
same logical ids, keeps CloudFormation-generated names, and warns at synth about every change
that would still make CloudFormation replace a queue.

A queue's ``QueueName`` and ``FifoQueue`` need replacement (CloudFormation resource reference,
AWS::SQS::Queue), and a resource whose logical id changes is created anew and the old one
deleted: for a queue, a new, empty queue.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from aws_cdk import CfnResource
from constructs import IConstruct

from constructs_lib.errors import ParameterTypeError, Problem
from constructs_lib.queue.pair import QueuePair

# CloudFormation: a logical id is alphanumeric (A-Za-z0-9) and unique within the template
# (Resources section, "Logical ID"); 255 characters at most (CloudFormation quotas).
LOGICAL_ID_MAX_LENGTH = 255
_LOGICAL_ID = re.compile(r"[A-Za-z0-9]+")
# An SQS queue URL (CloudFormation's physical id of a queue) ends with the queue's name.
_QUEUE_URL = re.compile(r"^https://[^/]+/\d{12}/(?P<name>[^/]+)$")


@dataclass(frozen=True)
class ExistingQueues:
    """The deployed source queue and DLQ that a ResilientQueue takes over (``existing=``).

    Every field describes what is deployed today, read from the old synthesized template
    (``cdk.out/<stack>.template.json``) or the deployed stack; none changes what is built
    except to keep it.
    """

    queue_logical_id: str
    """The source queue's logical id in the deployed template. Required."""
    names_generated: bool = False
    """CloudFormation generated both queues' names (no ``QueueName`` in the template): the
    ResilientQueue then sets no name either, and keeps them. Default: off, the queues are
    named (``queue_name``)."""
    queue_name: str | None = None
    """The source queue's deployed physical name (or its URL, as ``describe-stack-resources``
    gives it). Named queues: the name the ResilientQueue keeps (its ``queue_name`` defaults to
    it). Generated names: the name CloudFormation gave, which the DLQ's redrive-allow policy
    needs to name the source (without it the DLQ admits any source, QR004, with a warning).
    Default: none."""
    dead_letter_queue_name: str | None = None
    """The DLQ's deployed physical name, when named: a ResilientQueue names its DLQ
    ``<queue_name>-dlq``, and a different name replaces it (a warning). Default: none, not
    compared."""
    fifo: bool = False
    """Whether the deployed queues are FIFO; a different type replaces both (a warning).
    Default: standard."""
    dead_letter_logical_id: str | None = None
    """The DLQ's logical id. Default: none, the ResilientQueue's own (a new DLQ)."""
    queue_policy_logical_id: str | None = None
    """The source's ``AWS::SQS::QueuePolicy`` logical id, if it had one. Default: none."""
    dead_letter_policy_logical_id: str | None = None
    """The DLQ's ``AWS::SQS::QueuePolicy`` logical id, if it had one. Default: none."""
    event_source_logical_ids: Mapping[str, str] = field(default_factory=dict)
    """The event source mapping of each consumer, by the consumer function's construct id
    (``{"Worker": "WorkerSqsEventSource..."}``): ``add_lambda_consumer`` keeps it, so Lambda
    sees the same mapping (it refuses a second one between the same queue and function).
    Default: none."""

    def __post_init__(self) -> None:
        # Checked here, before a value reaches a regular expression or CDK: a wrong kind is
        # a ParameterTypeError naming the field, like every other prop.
        problems = [
            Problem(
                name, getattr(self, name), f"is not {wanted}", f"pass {wanted}", wrong_kind=True
            )
            for name, wanted in _FIELD_KINDS.items()
            if not _is_kind(getattr(self, name), wanted)
        ]
        ids = self.event_source_logical_ids
        if isinstance(ids, Mapping) and not all(isinstance(k, str) for k in ids):
            problems.append(
                Problem(
                    "event_source_logical_ids",
                    dict(ids),
                    "has a key that is not a str",
                    "key each logical id by the consumer function's construct id (a str)",
                    wrong_kind=True,
                )
            )
        if problems:
            raise ParameterTypeError("ExistingQueues", problems)

    @property
    def deployed_queue_name(self) -> str | None:
        """``queue_name``, with a queue URL reduced to the name it ends with."""
        if self.queue_name is None:
            return None
        match = _QUEUE_URL.match(self.queue_name)
        return match.group("name") if match else self.queue_name

    def logical_ids(self) -> dict[str, str]:
        """Every logical id given, by field name."""
        named = {
            "queue_logical_id": self.queue_logical_id,
            "dead_letter_logical_id": self.dead_letter_logical_id,
            "queue_policy_logical_id": self.queue_policy_logical_id,
            "dead_letter_policy_logical_id": self.dead_letter_policy_logical_id,
        }
        ids = {k: v for k, v in named.items() if v is not None}
        for function_id, logical_id in self.event_source_logical_ids.items():
            ids[f"event_source_logical_ids[{function_id!r}]"] = logical_id
        return ids


_FIELD_KINDS = {
    "queue_logical_id": "a str",
    "names_generated": "a bool",
    "queue_name": "a str or None",
    "dead_letter_queue_name": "a str or None",
    "fifo": "a bool",
    "dead_letter_logical_id": "a str or None",
    "queue_policy_logical_id": "a str or None",
    "dead_letter_policy_logical_id": "a str or None",
    "event_source_logical_ids": "a mapping of str to str",
}


def _is_kind(value: object, wanted: str) -> bool:
    if wanted == "a bool":
        return isinstance(value, bool)
    if wanted == "a mapping of str to str":
        return isinstance(value, Mapping)  # the values are checked as logical ids
    return isinstance(value, str) or (value is None and wanted.endswith("or None"))


def take_defaults(
    existing: ExistingQueues | None,
    queue_name: str | None,
    fifo: bool | None,
    dead_letter_given: bool,
) -> tuple[str | None, bool | None, list[Problem]]:
    """The queue name and type, from the deployed queues unless given (they are what the user
    means unless said otherwise), and what is wrong with ``existing``."""
    if existing is None:
        return queue_name, fifo, []
    if queue_name is None and not existing.names_generated:
        queue_name = existing.deployed_queue_name
    if fifo is None and existing.fifo:
        fifo = True
    return queue_name, fifo, existing_problems(existing, queue_name, dead_letter_given)


def adopt(
    existing: ExistingQueues | None,
    pair: QueuePair,
    queue_name: str,
    fifo: bool,
    warn: Callable[[str, str], None],
) -> None:
    """Keep the deployed resources' logical ids; warn of whatever would still replace one."""
    if existing is None:
        return
    keep_logical_id(pair.cfn_queue, existing.queue_logical_id)
    keep_logical_id(pair.queue.node.try_find_child("Policy"), existing.queue_policy_logical_id)
    if not pair.dead_letter_queue_given:
        keep_logical_id(pair.dead_letter_queue, existing.dead_letter_logical_id)
        keep_logical_id(
            pair.dead_letter_queue.node.try_find_child("Policy"),
            existing.dead_letter_policy_logical_id,
        )
    for reason in replacement_warnings(
        existing,
        queue_name=None if existing.names_generated else queue_name,
        dead_letter_name=None if existing.names_generated else pair.dead_letter_name,
        fifo=fifo,
        dead_letter_given=pair.dead_letter_queue_given,
    ):
        warn("existing", reason)
    if (
        existing.names_generated
        and existing.deployed_queue_name is None
        and not pair.dead_letter_queue_given
    ):
        warn("existing", generated_redrive_allow_warning(existing))


def existing_problems(
    existing: ExistingQueues, queue_name: str | None, dead_letter_given: bool
) -> list[Problem]:
    """What in ``existing`` cannot describe a deployed stack, or contradicts the other props."""
    problems = [
        Problem(
            f"existing.{prop}",
            value,
            f"is not a CloudFormation logical id (1-{LOGICAL_ID_MAX_LENGTH} letters and digits)",
            "copy the logical id from the deployed template's Resources section",
        )
        for prop, value in existing.logical_ids().items()
        if not isinstance(value, str)
        or not _LOGICAL_ID.fullmatch(value)
        or len(value) > LOGICAL_ID_MAX_LENGTH
    ]
    if existing.names_generated and queue_name is not None:
        problems.append(
            Problem(
                "queue_name",
                queue_name,
                "names a queue whose deployed name CloudFormation generated "
                "(existing.names_generated): adding a name replaces the queue, and its messages "
                "with it",
                "remove queue_name to keep the generated names, or set names_generated=False "
                "if the replacement is intended (empty the queues first)",
            )
        )
    if not existing.names_generated and existing.queue_name is None and queue_name is None:
        problems.append(
            Problem(
                "existing.queue_name",
                None,
                "is needed for named queues: without a name the ResilientQueue generates one "
                "from its path, which replaces the deployed queue",
                "pass existing.queue_name with the deployed name, or names_generated=True if "
                "CloudFormation generated the names",
            )
        )
    if dead_letter_given and existing.dead_letter_logical_id is not None:
        problems.append(
            Problem(
                "existing.dead_letter_logical_id",
                existing.dead_letter_logical_id,
                "names a DLQ to keep, but dead_letter_queue gives another: the ResilientQueue "
                "would build no DLQ to keep it under",
                "remove dead_letter_queue, or remove dead_letter_logical_id",
            )
        )
    return problems


def replacement_warnings(
    existing: ExistingQueues,
    *,
    queue_name: str | None,
    dead_letter_name: str | None,
    fifo: bool,
    dead_letter_given: bool,
) -> list[str]:
    """Why CloudFormation would replace (or delete) a deployed queue, one sentence each.

    ``queue_name`` and ``dead_letter_name`` are the names the ResilientQueue sets (None for
    generated names)."""
    source = _label(existing.queue_logical_id, existing.deployed_queue_name)
    dead_letter = _label(existing.dead_letter_logical_id, existing.dead_letter_queue_name)
    reasons: list[str] = []
    if fifo != existing.fifo:
        kinds = ("FIFO", "standard") if existing.fifo else ("standard", "FIFO")
        reasons.append(
            f"source queue {source} and its DLQ are {kinds[0]} and would become {kinds[1]}: "
            "FifoQueue needs replacement, so CloudFormation creates new, empty queues"
        )
    deployed = existing.deployed_queue_name
    if not existing.names_generated and deployed is not None and queue_name != deployed:
        reasons.append(
            f"source queue {source}: QueueName would change from {deployed!r} to "
            f"{queue_name!r}, which needs replacement (a new, empty queue)"
        )
    if (
        not dead_letter_given
        and not existing.names_generated
        and existing.dead_letter_queue_name is not None
        and dead_letter_name != existing.dead_letter_queue_name
    ):
        reasons.append(
            f"DLQ {dead_letter}: QueueName would change from "
            f"{existing.dead_letter_queue_name!r} to {dead_letter_name!r}, which needs "
            "replacement (a new, empty DLQ); empty it first, or pass it as dead_letter_queue"
        )
    if existing.dead_letter_logical_id is None and not dead_letter_given:
        reasons.append(
            "no existing.dead_letter_logical_id: the ResilientQueue creates a new DLQ and "
            "CloudFormation deletes the deployed one, with the messages in it"
        )
    return reasons


def generated_redrive_allow_warning(existing: ExistingQueues) -> str:
    """Why the DLQ of a queue with a generated name admits any source."""
    return (
        f"source queue {existing.queue_logical_id} keeps its CloudFormation-generated name, which "
        "the DLQ's redrive-allow policy needs to name it (referring to the queue instead "
        "would be a circular dependency): the DLQ has no redrive-allow policy, so any queue "
        "may use it (audit QR004). Fix: pass existing.queue_name with the deployed name "
        "(aws cloudformation describe-stack-resources gives the queue URL; the URL is "
        "accepted), and the DLQ admits this source only"
    )


def keep_logical_id(construct: IConstruct | None, logical_id: str | None) -> None:
    """Give ``construct``'s resource the logical id it has in the deployed stack."""
    if construct is None or logical_id is None:
        return
    resource = construct if isinstance(construct, CfnResource) else construct.node.default_child
    if isinstance(resource, CfnResource):
        resource.override_logical_id(logical_id)


def _label(logical_id: str | None, name: str | None) -> str:
    if logical_id is None:
        return repr(name)
    return f"{logical_id} ({name!r})" if name else logical_id
