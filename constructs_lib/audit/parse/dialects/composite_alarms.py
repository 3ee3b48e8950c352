"""Composite alarms over a template's metric alarms: which composite tells someone when an alarm
fires, for QR024.

A metric alarm without actions is not silent when a composite alarm whose ``AlarmRule`` can be
set off by it (``alarm_expressions.watched``) has enabled actions, directly or through composites that
watch that composite. What each alarm's composites do is written into the alarm's own row
(``model.COMPOSITES``) while the template is read, so both engines judge the same row.

References in a rule are resolved within the template: ``Ref``/``Fn::GetAtt ... Arn`` of an
alarm or composite (in ``Fn::Join`` pieces, ``Fn::Sub`` variables or alone), and literal names or
ARNs matched against the template's literal ``AlarmName``s, with parameters, mappings and
conditions as the rest of the template has them. A composite in another template is not seen:
its members are judged as if nobody watched them (a false alarm to suppress rather than a
silent alarm missed). A composite the audit cannot read (its rule, its actions, whether it is
created) never clears an alarm; the finding says what could not be read.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Final

from constructs_lib.audit import model
from constructs_lib.audit.model import ParsedTemplate, ResourceRow
from constructs_lib.audit.parse.alarm_expressions import RuleError, watched
from constructs_lib.audit.parse.intrinsics import UNKNOWN_PIECE, Scope, describe

# Not an AWS number: CloudWatch documents no depth for composites of composites. The audit
# follows this many levels above an alarm and says so when a chain goes further.
NESTING_FOLLOWED: Final = 10

_ALARM_TYPES = (model.ALARM, model.COMPOSITE_ALARM)
# Stands around the logical id of a local alarm in a rule's text while intrinsics are resolved:
# a character no alarm name or CloudFormation logical id holds.
_MARK: Final = "\x00"
_SUB_NAME = re.compile(r"\$\{([^}!][^}]*)\}")


@dataclass
class _Composite:
    shown: str
    watches: list[str] = field(default_factory=list)  # local logical ids, alarms or composites
    acts: bool | None = None  # has enabled actions; None when the audit cannot tell
    unsure: str = ""  # why ``acts`` is None
    unread: list[str] = field(default_factory=list)  # parts of its rule the audit cannot read


def annotate(template: Scope, resources: dict[str, Any], parsed: ParsedTemplate) -> None:
    """Write each metric alarm's verdict into its row (alarms no composite concerns keep theirs)."""
    verdicts = _verdicts(template, resources)
    template.take_uses()  # what the composites read is no resource's parameter source
    template.take_assumed()
    for index, row in enumerate(parsed.resources):
        verdict = verdicts.get(row.uid)
        if row.type == model.ALARM and verdict:
            properties = json.loads(row.properties)
            properties[model.COMPOSITES] = verdict
            text = json.dumps(properties, sort_keys=True, default=str)
            parsed.resources[index] = ResourceRow(*row[:-1], text)


def _shown(template: Scope, logical_id: str) -> str:
    return f"{template.stack}/{logical_id}" if template.stack else logical_id


def _verdicts(template: Scope, resources: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """uid of each metric alarm -> ``{"notified_by": NAME}`` or ``{"silent": [...], "unread":
    [...]}``, for the alarms some composite of the template may concern."""
    bodies = {
        str(lid): body
        for lid, body in resources.items()
        if isinstance(body, dict) and body.get("Type") == model.COMPOSITE_ALARM
    }
    if not bodies:
        return {}
    names = _alarm_names(template, resources)
    composites: dict[str, _Composite] = {}
    for lid, body in bodies.items():
        composite = _read(template, lid, body, names)
        if composite is not None:
            composites[lid] = composite
    watchers: dict[str, list[str]] = defaultdict(list)
    for lid in sorted(composites):
        for member in composites[lid].watches:
            watchers[member].append(lid)
    doubtful = [c for _, c in sorted(composites.items()) if c.unread and c.acts is not False]
    verdicts = {}
    for lid, kind in template.types.items():
        if kind == model.ALARM:
            verdict = _verdict(lid, composites, watchers, doubtful)
            if verdict:
                verdicts[model.uid(template.file, lid)] = verdict
    return verdicts


def _verdict(
    alarm: str,
    composites: dict[str, _Composite],
    watchers: dict[str, list[str]],
    doubtful: list[_Composite],
) -> dict[str, Any]:
    """What the composites above one alarm do for it, followed ``NESTING_FOLLOWED`` levels up."""
    above: list[_Composite] = []
    seen, level = {alarm}, [alarm]
    for _depth in range(NESTING_FOLLOWED):
        level = list(dict.fromkeys(c for m in level for c in watchers[m] if c not in seen))
        seen.update(level)
        above += [composites[c] for c in level]
    notifying = [c for c in above if c.acts is True]
    if notifying:
        return {"notified_by": notifying[0].shown}
    unread = [f"{c.shown}: {c.unsure}" for c in above if c.acts is None]
    unread += [f"{c.shown}: {why}" for c in doubtful for why in c.unread]
    if any(c not in seen for member in level for c in watchers[member]):
        unread.append(f"composites more than {NESTING_FOLLOWED} levels above it are not followed")
    silent = [c.shown for c in above if c.acts is False]
    unread = list(dict.fromkeys(unread))
    return {"silent": silent, "unread": unread} if silent or unread else {}


def _alarm_names(template: Scope, resources: dict[str, Any]) -> dict[str, list[str]]:
    """Literal AlarmName -> the logical ids of the template's alarms and composites named so."""
    names: dict[str, list[str]] = defaultdict(list)
    for lid, body in resources.items():
        if isinstance(body, dict) and body.get("Type") in _ALARM_TYPES:
            properties = body.get("Properties")
            raw = properties.get("AlarmName") if isinstance(properties, dict) else None
            name = template.normalize(raw)
            if isinstance(name, str) and UNKNOWN_PIECE not in name:
                names[name].append(str(lid))
    return names


def _read(
    template: Scope, lid: str, body: dict[str, Any], names: dict[str, list[str]]
) -> _Composite | None:
    """One composite: what it watches and whether it acts; None when it is not created."""
    composite = _Composite(_shown(template, lid))
    properties = body.get("Properties")
    if not isinstance(properties, dict):
        composite.unsure = "its Properties is not a mapping"
        composite.unread.append(composite.unsure)
        return composite
    condition = body.get("Condition")
    created = True if condition is None else template.condition(condition)
    if created is False:
        return None
    composite.acts, composite.unsure = _acts(template, properties)
    if created is None:
        composite.acts = None
        composite.unsure = f"its condition {describe(condition)} cannot be evaluated"
    template.take_assumed()
    rule = template.normalize(_marked(properties.get("AlarmRule"), template.types))
    for assumed in sorted(template.take_assumed()):
        composite.unread.append(f"its AlarmRule depends on condition {assumed}, not evaluated")
    if not isinstance(rule, str):
        composite.unread.append(f"its AlarmRule is {_readable(describe(rule))}")
        return composite
    try:
        operands = watched(rule)
    except RuleError as error:
        composite.unread.append(f"its AlarmRule cannot be read ({_readable(str(error))})")
        return composite
    for operand in operands:
        local = _local(operand, names, template.types)
        if local is None:
            composite.unread.append(
                f'ALARM("{_readable(operand)}") names an alarm the audit cannot resolve'
            )
        composite.watches += local or []
    return composite


def _acts(template: Scope, properties: dict[str, Any]) -> tuple[bool | None, str]:
    """Whether the composite has enabled actions, and why the audit cannot tell when it cannot."""
    enabled = template.normalize(properties.get("ActionsEnabled", True))
    if isinstance(enabled, str) and enabled.lower() in ("true", "false"):
        enabled = enabled.lower() == "true"
    actions = template.normalize(properties.get("AlarmActions"))
    if not isinstance(enabled, bool):
        return None, f"its ActionsEnabled is {describe(enabled)}"
    if actions is not None and not isinstance(actions, list):
        return None, f"its AlarmActions is {describe(actions)}"
    return enabled and bool(actions), ""


def _local(operand: str, names: dict[str, list[str]], types: dict[str, str]) -> list[str] | None:
    """The template's alarms an operand names ([] for none of them: an alarm elsewhere), None when
    the audit cannot tell which alarm it names."""
    name = operand
    if name.startswith("arn:"):
        parts = name.split(":", 6)
        if len(parts) < 7 or parts[5] != "alarm":
            return None
        name = parts[6]
    if name.startswith(_MARK) and name.endswith(_MARK) and types.get(name[1:-1]) in _ALARM_TYPES:
        return [name[1:-1]]
    if _MARK in name or UNKNOWN_PIECE in name:
        return None
    return names.get(name, [])


def _readable(text: str) -> str:
    """A rule's text for messages: the marked logical ids as ``${Id}``."""
    return re.sub(f"{_MARK}([^{_MARK}]*){_MARK}", r"${\1}", text)


def _marked(raw: Any, types: dict[str, str]) -> Any:
    """The raw AlarmRule with each reference to a local alarm or composite (``Ref``, ``Fn::GetAtt
    [Id, Arn]``, ``${Id}``/``${Id.Arn}`` in ``Fn::Sub``) replaced by its marked logical id, so
    that resolving the intrinsics keeps which alarm it was."""

    def mark(logical_id: Any) -> str | None:
        if isinstance(logical_id, str) and types.get(logical_id) in _ALARM_TYPES:
            return f"{_MARK}{logical_id}{_MARK}"
        return None

    if isinstance(raw, list):
        return [_marked(item, types) for item in raw]
    if not isinstance(raw, dict):
        return raw
    if len(raw) == 1:
        ((function, argument),) = raw.items()
        if function == "Ref" and mark(argument):
            return mark(argument)
        if function == "Fn::GetAtt":
            parts = argument.split(".", 1) if isinstance(argument, str) else argument
            if isinstance(parts, list) and len(parts) == 2 and parts[1] == "Arn" and mark(parts[0]):
                return mark(parts[0])
        if function == "Fn::Sub":
            return {"Fn::Sub": _marked_sub(argument, types, mark)}
    return {key: _marked(value, types) for key, value in raw.items()}


def _marked_sub(argument: Any, types: dict[str, str], mark: Any) -> Any:
    text, variables = argument, {}
    if isinstance(argument, list) and len(argument) == 2 and isinstance(argument[1], dict):
        text, variables = argument
    if not isinstance(text, str):
        return _marked(argument, types)

    def replace(match: re.Match[str]) -> str:
        logical_id, _, attribute = match.group(1).partition(".")
        marked = mark(logical_id) if match.group(1) not in variables else None
        return marked if marked and attribute in ("", "Arn") else match.group(0)

    text = _SUB_NAME.sub(replace, text)
    return [text, _marked(variables, types)] if isinstance(argument, list) else text
