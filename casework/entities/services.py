"""People's writes: linking two cases, merging a duplicate into the case that survives, and
the audit entry of every look at an entity. Each audited in its own transaction."""

from __future__ import annotations

from django.apps import apps
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.access import access_record
from audit.services import audit_entry_build, audit_record, audit_record_many
from casework.cases.models import Case, Decision
from casework.cases.services import case_close_merged, case_may_decide
from casework.entities.models import CaseLink, CaseMerge, Entity, Mention
from casework.errors import Conflict
from casework.people.roles import is_investigator

REASON_MAX = 2000
# Rows that stay with the merged case: its own decision (the merge itself), the link and
# merge records that say where it went, and what was sent about it (its outbox events, with
# their deliveries, and the actions they carry): each names the merged case in its payload,
# so on the survivor it would read as the survivor's. Everything else that points at a case moves.
KEEP_ON_MERGED = frozenset({"cases.Decision", "entities.CaseLink", "entities.CaseMerge",
                            "outbox.OutboxEvent", "outbox.Action"})


def _reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Say why."})
    if len(reason) > REASON_MAX:
        raise ValidationError({"reason": f"At most {REASON_MAX} characters."})
    return reason


def _person(actor) -> None:
    if not isinstance(actor, User) or not is_investigator(actor):
        raise PermissionDenied("Only a case worker links or merges cases.")


@transaction.atomic
def case_link(*, actor, from_case: Case, to_case: Case, kind: str, reason: str) -> CaseLink:
    """Link two cases (related, duplicate of, parent of) with a reason; audited on both."""
    _person(actor)
    if kind not in CaseLink.Kind.values:
        raise ValidationError({"kind": f"Choose one of: {', '.join(CaseLink.Kind.values)}."})
    if from_case.pk == to_case.pk:
        raise ValidationError({"to_case": "A case cannot be linked to itself."})
    reason = _reason(reason)
    if CaseLink.objects.filter(from_case=from_case, to_case=to_case, kind=kind).exists():
        raise Conflict(f"{from_case.reference} is already linked to {to_case.reference} as {kind}.",
                       code="already_linked")
    link = CaseLink(from_case=from_case, to_case=to_case, kind=kind, reason=reason, created_by=actor)
    try:
        with transaction.atomic():
            link.save()
    except IntegrityError as exc:
        raise Conflict(f"{from_case.reference} is already linked to {to_case.reference}.",
                       code="already_linked") from exc
    data = {"from": from_case.reference, "to": to_case.reference, "kind": kind, "reason": reason}
    audit_record_many([
        audit_entry_build(actor=actor, action="case.linked", case=from_case, obj=link, data=data),
        audit_entry_build(actor=actor, action="case.linked", case=to_case, obj=link, data=data),
    ])
    return link


def _running(case: Case) -> bool:
    from agents.models import AgentRun

    return AgentRun.objects.filter(case=case, status__in=AgentRun.ACTIVE).exists()


def _case_relations():
    """Every foreign key to Case in the project, found from the models' meta (a new app's
    rows move too, with no list to keep): (model, field) for many-to-one fields. A one-to-one
    (a case's own record: its alert, ticket ...) stays: the survivor has its own."""
    for model in apps.get_models():
        label = model._meta.label
        if label in KEEP_ON_MERGED or label == "entities.Mention":
            continue
        for f in model._meta.concrete_fields:
            if f.is_relation and f.many_to_one and f.related_model is Case:
                yield model, f


def _move(model, f, merged: Case, survivor: Case) -> tuple[int, int]:
    """Point `model`'s rows from the merged case to the survivor: (moved, kept). A row that a
    unique constraint refuses on the survivor stays where it was, and is counted."""
    rows = model._base_manager.filter(**{f.attname: merged.pk})
    try:
        with transaction.atomic():
            return rows.update(**{f.attname: survivor.pk}), 0
    except IntegrityError:
        moved = kept = 0
        for pk in rows.values_list("pk", flat=True):
            try:
                with transaction.atomic():
                    model._base_manager.filter(pk=pk).update(**{f.attname: survivor.pk})
                moved += 1
            except IntegrityError:
                kept += 1
        return moved, kept


@transaction.atomic
def case_merge(*, actor, merged: Case, survivor: Case, reason: str) -> CaseMerge:
    """Merge a duplicate into the case that survives.

    Steps: only a person who may decide both cases (the type's decider role); same type,
    not the same case; lock both rows (lower id first); the merged case must be open and
    not merged already. Move every row that points at the merged case (comments, tasks,
    evidence, runs, conversations, notifications ...: every foreign key to Case, found from
    the models) to the survivor, and its mentions (the survivor's own win); record the
    merge and a duplicate link; close the merged case through the shared close
    (casework.cases.services.case_close_merged: the lifecycle's check, the type's
    case_closing and case_closed, so its record reaches its own decided state, a "merged"
    decision naming the survivor, and `case.merged` in the outbox); audit on both cases.
    Its audit entries stay as written (the trail is append-only): the survivor's timeline
    reads them through the merge. There is no un-merge: case_reopen refuses a merged case.
    """
    _person(actor)
    reason = _reason(reason)
    if merged.pk == survivor.pk:
        raise ValidationError({"survivor": "A case cannot be merged into itself."})
    if merged.case_type != survivor.case_type:
        raise ValidationError({"survivor": f"Only a {merged.type_info.label.lower()} can take "
                                           f"{merged.reference}; {survivor.reference} is a "
                                           f"{survivor.type_info.label.lower()}."})
    case_may_decide(actor, merged)
    case_may_decide(actor, survivor)
    locked = {c.pk: c for c in Case.objects.select_for_update(of=("self",)).filter(
        pk__in=[merged.pk, survivor.pk]).order_by("pk")}
    merged, survivor = locked[merged.pk], locked[survivor.pk]
    if CaseMerge.objects.filter(merged=survivor).exists():
        raise Conflict(f"{survivor.reference} was itself merged into another case; merge into that one.",
                       code="survivor_merged")
    into = CaseMerge.objects.filter(merged=merged).select_related("survivor").first()
    if into is not None:
        raise Conflict(f"{merged.reference} was merged into {into.survivor.reference} already.",
                       code="already_merged")
    if merged.is_closed:
        raise Conflict(f"{merged.reference} is closed; a decided case is not merged.", code="case_closed")
    if _running(merged):
        # A run moved mid-way would write its results onto the survivor's record.
        raise Conflict(f"{merged.reference} has agents running; merge it once they finish.", code="agents_running")

    moved: dict[str, int] = {}
    kept: dict[str, int] = {}
    # Mentions: the survivor names the entity already, or takes the merged case's mention.
    named = Mention.objects.filter(case=survivor).values("entity_id")
    Mention.objects.filter(case=merged, entity_id__in=named).delete()
    moved["entities.Mention"] = Mention.objects.filter(case=merged).update(case=survivor)
    for model, f in _case_relations():
        n, k = _move(model, f, merged, survivor)
        if n:
            moved[model._meta.label] = moved.get(model._meta.label, 0) + n
        if k:
            kept[model._meta.label] = kept.get(model._meta.label, 0) + k
    moved = {label: n for label, n in moved.items() if n}

    merge = CaseMerge.objects.create(merged=merged, survivor=survivor, reason=reason, merged_by=actor,
                                     moved={"moved": moved, "kept": kept})
    CaseLink.objects.get_or_create(from_case=merged, to_case=survivor, kind=CaseLink.Kind.DUPLICATE,
                                   defaults={"reason": reason, "created_by": actor})
    case_close_merged(actor=actor, case=merged, survivor=survivor, reason=reason,
                      moved={"moved": moved, "kept": kept})
    Case.objects.filter(pk=survivor.pk).update(updated_at=timezone.now())
    data = {"merged": merged.reference, "survivor": survivor.reference, "reason": reason,
            "moved": moved, "kept": kept}
    audit_record_many([
        audit_entry_build(actor=actor, action="case.merged", case=merged, obj=merge, data=data),
        audit_entry_build(actor=actor, action="case.merged_in", case=survivor, obj=merge, data=data),
    ])
    return merge


def entity_viewed(*, actor, entity: Entity, what: str = "page") -> None:
    """A person looked at an entity (its page or its graph): audited like a case view. The
    entry holds the kind and the display (masked where the value is sensitive), never the
    stored value (an email's hash is a lookup key). On the access log too (audit.access)."""
    audit_record(actor=actor, action="entity.viewed", obj=entity,
                 data={"kind": entity.kind, "display": entity.display, "what": what})
    access_record(actor, via=f"entity.{what}", object_type="entity", object_id=str(entity.pk))


def entities_decided(*, case: Case, decision: Decision) -> int:
    """A person's decision: when its outcome confirms fraud (the type's Entities.fraud_outcomes),
    flag every entity the case names. Called in case_close's transaction (receivers.py)."""
    declared = case.type_info.entities
    if declared is None or decision.outcome not in declared.fraud_outcomes:
        return 0
    return entities_confirm_fraud(case=case, decided_at=decision.decided_at)


def entities_confirm_fraud(*, case: Case, decided_at) -> int:
    """Flag the entities a case decided as fraud names (the first such case stays the one shown)."""
    return (Entity.objects.filter(mentions__case=case, confirmed_fraud_at__isnull=True)
            .update(confirmed_fraud_at=decided_at, confirmed_fraud_case=case))
