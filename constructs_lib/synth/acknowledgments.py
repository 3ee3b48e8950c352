"""Suppressions of audit rules as a CDK app writes them, read back from the construct tree.

Two spellings reach a resource the audit judges:

- an acknowledgment, ``Validations.of(scope).acknowledge(Acknowledgment(id="QR024", reason=...))``
  (or the id ``constructs-lib-queue-resilience::QR024``), which applies to ``scope`` and every
  construct below it; CDK keeps it as construct metadata of type ``aws:cdk:acknowledged-rules``;
- the resource's CloudFormation Metadata ``cdk_nag: rules_to_suppress: [{id, reason}]`` (which
  cdk-nag's ``WriteNagSuppressionsToCloudFormationAspect`` writes from acknowledgments), or the
  same under the stack's template Metadata.

``find`` answers whether a rule is suppressed for some resources, the way the audit would judge
their synthesized templates: with a reason of at least ``MIN_REASON_LENGTH`` characters, on every
one of them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aws_cdk import CfnResource, Stack, Validations
from constructs import IConstruct

from constructs_lib.policy import suppression_terms

# CDK stores an acknowledgment of a bare id under its annotations namespace ("Annotation::QR024";
# older releases wrote "annotation::"); cdk-nag drops that prefix when it writes the Metadata.
_ANNOTATION_NAMESPACE = re.compile(r"^annotation::", re.IGNORECASE)


@dataclass(frozen=True)
class Suppression:
    rule_id: str
    reason: str
    where: str  # for messages, after the rule id: "acknowledged on Stack", "suppressed in ..."


@dataclass(frozen=True)
class Verdict:
    """A rule's suppression for some resources: the one honoured (on every resource), and why
    each suppression of the rule that was found is not honoured."""

    honoured: Suppression | None
    ignored: tuple[str, ...]


def rule_of_acknowledgment(acknowledged_id: Any) -> str | None:
    """The audit rule an acknowledgment's stored id names, or None for another tool's rule."""
    if not isinstance(acknowledged_id, str):
        return None
    return suppression_terms.rule_of(_ANNOTATION_NAMESPACE.sub("", acknowledged_id))


# What each scope acknowledges, and each stack's template Metadata, read once per ``find``: the
# resources of one finding share their ancestors, and every read is a call into CDK's Node.js
# process. Keyed by ``id`` of objects the cache keeps alive for the call.
_Found = list[tuple[str, Any, str]]


@dataclass
class _Reads:
    scopes: dict[int, tuple[IConstruct, _Found]] = field(default_factory=dict)
    stacks: dict[int, tuple[Stack, _Found]] = field(default_factory=dict)


@functools.cache
def _acknowledged_rules_key() -> str:
    return Validations.ACKNOWLEDGED_RULES_METADATA_KEY


def _scope_acknowledgments(scope: IConstruct) -> _Found:
    found: _Found = []
    node = scope.node
    for entry in node.metadata:
        if entry.type != _acknowledged_rules_key():
            continue
        if not isinstance(entry.data, Mapping):
            continue
        for acknowledged_id, reason in entry.data.items():
            rule_id = rule_of_acknowledgment(acknowledged_id)
            if rule_id is not None:
                found.append((rule_id, reason, f"acknowledged on {node.path or 'the app'}"))
    return found


def _acknowledgments(scopes: Sequence[IConstruct], reads: _Reads) -> Iterator[tuple[str, Any, str]]:
    for scope in reversed(scopes):  # nearest first, as cdk-nag reads them
        known = reads.scopes.get(id(scope))
        if known is None:
            known = reads.scopes[id(scope)] = (scope, _scope_acknowledgments(scope))
        yield from known[1]


def _metadata_entries(metadata: Any) -> Iterator[tuple[str, Any]]:
    nag = metadata.get(suppression_terms.CDK_NAG_KEY) if isinstance(metadata, Mapping) else None
    listed = nag.get(suppression_terms.CDK_NAG_LIST) if isinstance(nag, Mapping) else None
    for entry in listed if isinstance(listed, list) else []:
        if isinstance(entry, Mapping):
            rule_id = suppression_terms.rule_of(entry.get("id"))
            if rule_id is not None:
                yield rule_id, entry.get("reason")


def _candidates(construct: IConstruct, reads: _Reads) -> Iterator[tuple[str, Any, str]]:
    """Every suppression of an audit rule that applies to ``construct``'s resource:
    (rule id, reason as written, where)."""
    node = construct.node
    scopes = node.scopes
    yield from _acknowledgments(scopes, reads)
    resource = construct if isinstance(construct, CfnResource) else node.default_child
    if isinstance(resource, CfnResource):
        metadata = {
            suppression_terms.CDK_NAG_KEY: resource.get_metadata(suppression_terms.CDK_NAG_KEY)
        }
        for rule_id, reason in _metadata_entries(metadata):
            yield rule_id, reason, f"suppressed in the Metadata of {resource.node.path}"
    stack = next((s for s in reversed(scopes) if isinstance(s, Stack)), None) or Stack.of(construct)
    known = reads.stacks.get(id(stack))
    if known is None:
        known = reads.stacks[id(stack)] = (stack, _template_suppressions(stack))
    yield from known[1]


def _template_suppressions(stack: Stack) -> _Found:
    return [
        (rule_id, reason, f"suppressed in the template Metadata of {stack.node.path}")
        for rule_id, reason in _metadata_entries(stack.template_options.metadata)
    ]


def find(rule_id: str, resources: Sequence[IConstruct]) -> Verdict:
    """Whether ``rule_id`` is suppressed with a reason for every one of ``resources``."""
    honoured: list[Suppression | None] = []
    ignored: list[str] = []
    reads = _Reads()
    for construct in resources:
        valid = None
        for candidate_rule, reason, where in _candidates(construct, reads):
            if candidate_rule != rule_id:
                continue
            problem = suppression_terms.reason_problem(reason)
            if problem is None:
                valid = valid or Suppression(rule_id, str(reason).strip(), where)
            elif (text := f"{rule_id} {where} {problem}") not in ignored:
                ignored.append(text)
        honoured.append(valid)
    everywhere = bool(honoured) and all(honoured)
    return Verdict(honoured[0] if everywhere else None, tuple(ignored))
