"""What a rule is and what it returns: a ``Rule`` of the catalog, its ``Hit`` on a resource, an
``Unknown`` value it could not judge (reported as QR900), and ``Unknowable``, raised where a
rule reads such a value."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from constructs_lib.audit.model.context import QueueContext, Resource
from constructs_lib.audit.model.findings import AuditSeverity


@dataclass(frozen=True)
class Hit:
    """A rule's verdict on one resource."""

    resource: Resource
    message: str


@dataclass(frozen=True)
class Unknown:
    """A value a rule needed but the audit could not resolve."""

    resource: Resource
    what: str


Outcome = Hit | Unknown


@dataclass(frozen=True)
class Rule:
    id: str
    severity: AuditSeverity
    title: str
    fix: str
    check: Callable[[QueueContext], Iterable[Outcome]]


class Unknowable(Exception):
    """Raised by a rule that reads a value the audit could not resolve; ``evaluate`` reports it
    as an ``Unknown``."""

    def __init__(self, resource: Resource, what: str) -> None:
        super().__init__(what)
        self.resource = resource
        self.what = what
