"""Every change to detection rules and exchange rates: checked, written and audited in one
transaction. Rules are authored by investigators, managers or admins; a version runs only
after a manager or admin who is not its author approves it (four eyes)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal, InvalidOperation

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from pydantic import ValidationError as PydanticValidationError

from audit.services import audit_record
from casework.errors import Conflict
from casework.people.roles import ADMIN, MANAGER, user_roles
from casework.transactions import aggregates, rules
from casework.transactions.monitoring.models import CurrencyRate, DetectionRule, RuleVersion

Status = RuleVersion.Status


def may_approve(user) -> bool:
    return bool(user_roles(user) & {MANAGER, ADMIN})


def _conditions(conditions) -> list[dict]:
    try:
        parsed = rules.Rule.model_validate({"name": "x", "conditions": conditions}).conditions
    except PydanticValidationError as exc:
        raise ValidationError({"conditions": [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]})
    _lists_exist(parsed)
    return [c.dump() for c in parsed]


def _lists_exist(parsed) -> None:
    """A list condition names a list that exists and holds values of its field."""
    from casework.transactions.lists.models import ValueList

    wanted = {c.in_list: c.field for c in parsed if isinstance(c, rules.ListCondition)}
    if not wanted:
        return
    found = dict(ValueList.objects.filter(name__in=wanted).values_list("name", "field"))
    errors = []
    for name, field in wanted.items():
        if name not in found:
            errors.append(f"in_list: there is no list named {name!r}.")
        elif found[name] != field:
            errors.append(f"in_list: {name} holds {found[name]} values, not {field}.")
    if errors:
        raise ValidationError({"conditions": errors})


def _choice(name: str, value: str, choices) -> str:
    if value not in choices.values:
        raise ValidationError({name: [f"Use one of {', '.join(choices.values)}; not {value!r}."]})
    return value


def _version_data(version: RuleVersion) -> dict:
    return {"rule": version.rule.name, "version": version.number, "conditions": version.conditions,
            "action": version.action, "mode": version.mode, "status": version.status}


@transaction.atomic
def rule_create(*, actor, name: str, conditions, action: str, mode: str, description: str = "", note: str = "",
                drafted_from=None, now: datetime | None = None) -> RuleVersion:
    """A new detection rule and its version 1, proposed (it runs once someone else approves it)."""
    now = now or timezone.now()
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": ["Give the rule a name."]})
    if DetectionRule.objects.filter(name=name).exists():
        raise ValidationError({"name": [f"A rule named {name!r} exists; propose a new version of it instead."]})
    rule = DetectionRule.objects.create(name=name[:120], description=description or "", drafted_from=drafted_from,
                                        created_by=actor, created_at=now)
    return _propose(actor=actor, rule=rule, conditions=conditions, action=action, mode=mode, note=note, now=now)


@transaction.atomic
def rule_version_propose(*, actor, rule: DetectionRule, conditions, action: str, mode: str, note: str = "",
                         now: datetime | None = None) -> RuleVersion:
    """A new version of a rule, proposed; the active one keeps running until it is approved."""
    rule = DetectionRule.objects.select_for_update().get(pk=rule.pk)
    return _propose(actor=actor, rule=rule, conditions=conditions, action=action, mode=mode, note=note,
                    now=now or timezone.now())


def _propose(*, actor, rule, conditions, action, mode, note, now) -> RuleVersion:
    number = (rule.versions.aggregate(n=Max("number"))["n"] or 0) + 1
    version = RuleVersion(rule=rule, number=number, conditions=_conditions(conditions),
                          action=_choice("action", action, RuleVersion.Action),
                          mode=_choice("mode", mode, RuleVersion.Mode), note=(note or "").strip(), author=actor,
                          created_at=now)
    version.full_clean(exclude=["rule", "author"])
    version.save()
    audit_record(actor=actor, action="txn.rule_version_proposed", obj=version, data=_version_data(version))
    return version


def _locked(version: RuleVersion) -> RuleVersion:
    return RuleVersion.objects.select_for_update(of=("self",)).select_related("rule", "author").get(pk=version.pk)


def _activate(*, actor, version: RuleVersion, now: datetime, reason: str) -> RuleVersion:
    previous = (RuleVersion.objects.select_for_update().filter(rule=version.rule, status=Status.ACTIVE)
                .exclude(pk=version.pk).first())
    if previous is not None:
        previous.status = Status.APPROVED
        previous.save(update_fields=["status"])
    version.status, version.activated_at = Status.ACTIVE, now
    version.save(update_fields=["status", "activated_at"])
    audit_record(actor=actor, action="txn.rule_version_activated", obj=version,
                 data={**_version_data(version), "replaced": previous.number if previous else None, "reason": reason})
    # Counters for the aggregates it reads (built from the history if new), none for those no
    # active rule reads any more.
    aggregates.series_sync()
    return version


@transaction.atomic
def rule_version_approve(*, actor, version: RuleVersion, now: datetime | None = None) -> RuleVersion:
    """A manager or admin who is not the author approves a proposed version; it becomes the
    rule's active version at once (the one it replaces stays approved, for a rollback)."""
    if not may_approve(actor):
        raise PermissionDenied("Only managers and admins approve rules.")
    now = now or timezone.now()
    version = _locked(version)
    if version.status != Status.PROPOSED:
        raise Conflict(f"{version} is {version.get_status_display().lower()}; only a proposed version is approved.",
                       code="not_proposed")
    if version.author_id == getattr(actor, "pk", None):
        raise PermissionDenied(f"{version} was written by you; another manager or admin approves it.")
    version.approver, version.approved_at = actor, now
    version.status = Status.APPROVED
    version.save(update_fields=["approver", "approved_at", "status"])
    audit_record(actor=actor, action="txn.rule_version_approved", obj=version, data=_version_data(version))
    return _activate(actor=actor, version=version, now=now, reason="approved")


@transaction.atomic
def rule_version_reject(*, actor, version: RuleVersion, reason: str = "") -> RuleVersion:
    if not may_approve(actor):
        raise PermissionDenied("Only managers and admins reject rules.")
    version = _locked(version)
    if version.status != Status.PROPOSED:
        raise Conflict(f"{version} is {version.get_status_display().lower()}; only a proposed version is rejected.",
                       code="not_proposed")
    version.status = Status.REJECTED
    version.save(update_fields=["status"])
    audit_record(actor=actor, action="txn.rule_version_rejected", obj=version,
                 data={**_version_data(version), "reason": (reason or "").strip()})
    return version


@transaction.atomic
def rule_version_activate(*, actor, version: RuleVersion, now: datetime | None = None) -> RuleVersion:
    """Roll back (or forward) to a version approved earlier: it becomes the active one."""
    if not may_approve(actor):
        raise PermissionDenied("Only managers and admins change which version of a rule runs.")
    version = _locked(version)
    if version.status == Status.ACTIVE:
        return version
    if version.status != Status.APPROVED:
        raise Conflict(f"{version} was never approved; it cannot run.", code="not_approved")
    return _activate(actor=actor, version=version, now=now or timezone.now(), reason="rollback")


@transaction.atomic
def rule_disable(*, actor, rule: DetectionRule) -> DetectionRule:
    """Stop a rule: its active version goes back to approved (it can be activated again)."""
    if not may_approve(actor):
        raise PermissionDenied("Only managers and admins stop rules.")
    active = RuleVersion.objects.select_for_update().filter(rule=rule, status=Status.ACTIVE).first()
    if active is None:
        raise Conflict(f"{rule.name} has no active version.", code="not_active")
    active.status = Status.APPROVED
    active.save(update_fields=["status"])
    audit_record(actor=actor, action="txn.rule_disabled", obj=active, data=_version_data(active))
    aggregates.series_sync()
    return rule


@transaction.atomic
def rate_set(*, actor, currency: str, rate) -> CurrencyRate:
    currency = (currency or "").strip().upper()
    if len(currency) != 3 or not currency.isalpha():
        raise ValidationError({"currency": ["Give a three-letter ISO 4217 code."]})
    try:
        value = Decimal(str(rate))
    except InvalidOperation:
        raise ValidationError({"rate": ["Give a number."]})
    if not value.is_finite() or value <= 0:
        raise ValidationError({"rate": ["The rate must be above 0."]})
    row, _ = CurrencyRate.objects.update_or_create(currency=currency, defaults={"rate": value})
    audit_record(actor=actor, action="txn.rate_set", obj=row, data={"currency": currency, "rate": str(value)})
    return row
