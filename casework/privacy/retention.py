"""Retention: each case type's personal data is removed once its policy's time has passed
(settings.RETENTION: days after the case closed or was decided), unless a legal hold keeps it.

What "personal data" is, the type says (casework.cases.types.Retention, registered from its
AppConfig.ready): its own records' fields through `purge`, and which of the parts every case
has go too (`shared`). The case itself, its decisions (reasons with e-mail addresses and card
numbers masked), outcomes and counts stay, so reports still add up.

A run (`retention_run`, the beat task's, with an injected clock):
  1. per type with a policy, the cases whose moment is older than the cut-off and that no
     earlier run purged (RetentionPurge is the claim);
  2. those held (an open hold on the case, or on an entity the case names) are kept and
     reported as "kept: legal hold";
  3. the rest, oldest first, at most `batch_size` per run, each in its own transaction:
     the type's purge, the shared parts, a RetentionPurge row with the counts, and an audit
     entry naming the policy and the case (never the data).
     The case's audit entries become tombstones in the same transaction, by the erasure's own
     path (casework/privacy/tombstones.py, then audit.erasure.audit_entries_tombstone), and the
     purge's `audit_tombstoned_at` says when; the chain and its signed checkpoints still verify.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet

from agents.models import AgentCall, AgentRun
from audit.services import audit_record
from casework.cases.attachments.models import Attachment
from casework.cases.masking import card_masked, email_masked
from casework.cases.models import Case, Comment, Decision
from casework.cases.types import CASE_TYPES
from casework.entities.models import Mention
from casework.outbox.models import OutboundEmail, OutboxEvent
from casework.privacy.models import LegalHold, RetentionPurge
from casework.privacy.tombstones import audit_tombstone

REMOVED = "[removed under the retention policy]"
SHARED_PARTS = ("description", "attachments", "mentions", "agent_calls", "comments", "outbox")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_CARD = re.compile(r"\b(?:\d[ -]?){12,18}\d\b")


@dataclass(frozen=True)
class Policy:
    case_type: str
    label: str
    days: int
    moment: str  # "closed" or "decided"
    shared: tuple[str, ...]
    describe: str

    def __str__(self) -> str:
        return f"{self.case_type}={self.days}@{self.moment}"


@dataclass
class RetentionReport:
    """What a run did: the cases purged (reference -> policy) and those kept by a hold."""

    purged: dict[str, str] = field(default_factory=dict)
    kept_legal_hold: list[str] = field(default_factory=list)
    left_for_next_run: int = 0

    def as_dict(self) -> dict:
        return {"purged": self.purged, "kept: legal hold": self.kept_legal_hold,
                "left for the next run": self.left_for_next_run}


def retention_policies() -> list[Policy]:
    """Every registered type's policy, in the registry's order (a type without one keeps its data)."""
    rules = settings.RETENTION
    return [Policy(ct.key, ct.label, rules[ct.key]["days"], rules[ct.key]["from"], ct.retention.shared,
                   ct.retention.describe)
            for ct in CASE_TYPES.values() if ct.key in rules and ct.retention is not None]


def open_holds_q(now: datetime, prefix: str = "") -> Q:
    return Q(**{f"{prefix}lifted_at__isnull": True}) & (
        Q(**{f"{prefix}until__isnull": True}) | Q(**{f"{prefix}until__gt": now}))


def held_q(now: datetime) -> Q:
    """A case held: an open hold on it, or on an entity it names."""
    on_case = LegalHold.objects.filter(open_holds_q(now), case=OuterRef("pk"))
    on_entity = LegalHold.objects.filter(
        open_holds_q(now), entity__in=Mention.objects.filter(case=OuterRef(OuterRef("pk"))).values("entity"))
    return Q(Exists(on_case)) | Q(Exists(on_entity))


def retention_due(policy: Policy, *, now: datetime) -> QuerySet[Case]:
    """This type's cases past the policy's cut-off that no run purged yet (held ones included)."""
    cutoff = now - timedelta(days=policy.days)
    cases = Case.objects.filter(case_type=policy.case_type, retention_purge__isnull=True)
    if policy.moment == "closed":
        return cases.filter(closed_at__lt=cutoff)
    decided = Decision.objects.filter(case=OuterRef("pk"), final=True, decided_at__lt=cutoff)
    return cases.filter(Exists(decided))


def retention_overview(*, now: datetime) -> list[dict]:
    """Per policy: the rule, what goes, how many cases are due and how many of those are held
    (the admin's page)."""
    rows = []
    for policy in retention_policies():
        due = retention_due(policy, now=now)
        held = due.filter(held_q(now)).count()
        rows.append({"policy": policy, "due": due.count() - held, "held": held,
                     "purged": RetentionPurge.objects.filter(case__case_type=policy.case_type).count()})
    return rows


def redact_personal(text: str) -> str:
    """Free text with e-mail addresses and card numbers masked as the entities keep them."""
    text = _EMAIL.sub(lambda m: email_masked(m.group(0)), text)
    return _CARD.sub(lambda m: card_masked(m.group(0)), text)


def _purge_shared(case: Case, parts: tuple[str, ...]) -> dict[str, int]:
    removed: dict[str, int] = {}
    if "description" in parts:
        removed["description"] = Case.objects.filter(pk=case.pk).exclude(description="").update(description="")
    if "attachments" in parts:
        attachments = list(Attachment.objects.filter(case=case))
        for attachment in attachments:
            # The file goes once its row is gone for good (a rollback keeps both).
            transaction.on_commit(lambda f=attachment.file: f.storage.delete(f.name))
        removed["attachments"] = Attachment.objects.filter(case=case).delete()[0]
    if "mentions" in parts:
        removed["entity mentions"] = Mention.objects.filter(case=case).delete()[0]
    if "agent_calls" in parts:
        removed["agent calls"] = AgentCall.objects.filter(run__case=case).update(
            input={"removed": "retention"}, output=None, attempt_log=[], error="")
        AgentRun.objects.filter(case=case).update(state={})
    if "comments" in parts:
        removed["comments"] = Comment.objects.filter(case=case).update(body=REMOVED)
    if "outbox" in parts:
        # Delivered long ago (years after the close): the bodies go, the bookkeeping stays.
        removed["e-mails sent"] = OutboundEmail.objects.filter(case=case).update(body=REMOVED, to="", subject="")
        removed["outbox events"] = OutboxEvent.objects.filter(case=case).update(payload={"removed": "retention"})
    return removed


def _redact_decisions(case: Case) -> int:
    count = 0
    for decision in Decision.objects.filter(case=case):
        reason = redact_personal(decision.reason)
        if reason != decision.reason:
            Decision.objects.filter(pk=decision.pk).update(reason=reason)
            count += 1
    return count


@transaction.atomic
def retention_purge_case(*, case_id: int, policy: Policy, now: datetime) -> RetentionPurge | None:
    """Remove one case's personal data under `policy`; None when another run got there first or
    a hold was placed since the case was listed (checked again under the row's lock)."""
    # Only the case row is locked (the purge row is on the nullable side of the join).
    case = Case.objects.select_for_update(of=("self",)).filter(pk=case_id, retention_purge__isnull=True).first()
    if case is None or Case.objects.filter(pk=case_id).filter(held_q(now)).exists():
        return None
    removed = case_personal_data_remove(case, policy.shared)
    purge = RetentionPurge(case=case, policy=str(policy), purged_at=now, removed=removed)
    purge.full_clean()
    purge.save()
    # What the audit trail quoted about the case goes too, by the erasure's one path: every
    # entry about the case becomes a tombstone naming this purge (the chain still verifies).
    tombstoned = audit_tombstone(entries=Q(case_id=case.pk), request_ref=f"retention-{case.reference}")
    purge.audit_tombstoned_at = now
    purge.removed = {**removed, **tombstoned.as_dict()}
    purge.save(update_fields=["audit_tombstoned_at", "removed"])
    audit_record(actor="system", action="retention.purged", case=case, obj=purge,
                 data={"policy": str(policy), "removed": purge.removed})
    return purge


def case_personal_data_remove(case: Case, parts: tuple[str, ...]) -> dict[str, int]:
    """Remove one case's personal data as its type defines it (Retention.purge) and the shared
    `parts`, and mask addresses and card numbers in its decisions' reasons; return the counts.
    Retention runs it on a case past its policy; an erasure on each case of the subject that no
    hold or legal duty keeps (casework.privacy.erasure)."""
    removed = {name: n for name, n in CASE_TYPES[case.case_type].retention.purge(case).items()}
    removed.update(_purge_shared(case, parts))
    removed["decision reasons redacted"] = _redact_decisions(case)
    return removed


def retention_run(*, now: datetime, batch_size: int | None = None) -> RetentionReport:
    """One pass over every policy (see the module's docstring). Idempotent: a purged case is
    never listed again; a held one is listed, kept and reported on every run until released."""
    batch_size = batch_size or settings.RETENTION_BATCH
    report = RetentionReport()
    for policy in retention_policies():
        due = retention_due(policy, now=now)
        report.kept_legal_hold += list(due.filter(held_q(now)).order_by("pk").values_list("reference", flat=True))
        todo = due.exclude(held_q(now)).order_by("pk")
        room = batch_size - len(report.purged)
        for case_id, reference in todo.values_list("pk", "reference")[:max(room, 0)]:
            if retention_purge_case(case_id=case_id, policy=policy, now=now) is not None:
                report.purged[reference] = str(policy)
        report.left_for_next_run += todo.count()
    return report
