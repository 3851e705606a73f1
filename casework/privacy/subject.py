"""Everything held about one data subject, and the subject-access export of it (issue 42.4).

`subject_held(entity)` is the finder: given an entity (a customer, an employee, a card, an
e-mail address ... found through casework.entities), the cases that name it and, as querysets,
every row those cases hold (decisions, comments, attachments, entity mentions, agent runs and
calls, outbox events, deliveries and e-mails), the trace files of those runs, the evaluation
scenarios made from those cases, and each case type's own records (its registered
`Retention.held`: a ticket's thread and raw mail, an access claim ...). The export reads it; the
erasure of a data subject will blank or delete the same rows.

`subject_access_export(*, actor, entity, reason)` is for admins and data-protection officers
only (casework.people.roles.is_data_protection): the subject's data is every team's, so the
exporter's need-to-know is their role, not a team; they see every value whole (the subject is
entitled to their own data). It writes one audit entry naming the request and the entity's id,
never the data, and returns the zip (subject.json, report.json, the attachments' files) with a
report of what went in. The zip is built in memory and never stored: no second copy of the
subject's data to keep track of.
"""

from __future__ import annotations

import io
import json
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from agents.evals.models import StoredScenario
from agents.models import AgentCall, AgentRun
from audit.services import audit_record
from casework.cases.attachments.models import Attachment
from casework.cases.models import Case, Comment, Decision
from casework.cases.reasons import REASON_MAX_LENGTH, reason_on_record  # noqa: F401 (REASON_MAX_LENGTH re-exported)
from casework.cases.types import CASE_TYPES
from casework.entities.models import Entity, Mention
from casework.outbox.models import Delivery, OutboundEmail, OutboxEvent
from casework.people.roles import is_data_protection


@dataclass
class SubjectHeld:
    """What is held about one subject: querysets over every place (see the module docstring)."""

    entity: Entity
    cases: QuerySet[Case]
    mentions: QuerySet[Mention]
    decisions: QuerySet[Decision]
    comments: QuerySet[Comment]
    attachments: QuerySet[Attachment]
    agent_runs: QuerySet[AgentRun]
    agent_calls: QuerySet[AgentCall]
    outbox_events: QuerySet[OutboxEvent]
    deliveries: QuerySet[Delivery]
    outbound_emails: QuerySet[OutboundEmail]
    scenarios: QuerySet[StoredScenario]
    trace_files: list[Path] = field(default_factory=list)

    def records(self, case: Case) -> dict:
        """The case type's own records' data on `case` (Retention.held), {} when it registers none."""
        retention = CASE_TYPES[case.case_type].retention if case.case_type in CASE_TYPES else None
        return retention.held(case) if retention is not None and retention.held is not None else {}


def subject_held(entity: Entity) -> SubjectHeld:
    case_ids = Mention.objects.filter(entity=entity).values("case_id")
    cases = Case.objects.filter(pk__in=case_ids).order_by("pk")
    runs = AgentRun.objects.filter(case__in=case_ids)
    events = OutboxEvent.objects.filter(case__in=case_ids)
    trace_ids = {t for t in runs.values_list("trace_id", flat=True) if t} | {
        t for t in AgentCall.objects.filter(run__in=runs).values_list("trace_id", flat=True) if t}
    trace_dir = Path(getattr(settings, "TRACE_DIR", "") or ".")
    traces = sorted(p for p in (trace_dir / f"{t}.jsonl" for t in trace_ids) if p.is_file())
    return SubjectHeld(
        entity=entity, cases=cases, mentions=Mention.objects.filter(entity=entity).select_related("case"),
        decisions=Decision.objects.filter(case__in=case_ids), comments=Comment.objects.filter(case__in=case_ids),
        attachments=Attachment.objects.filter(case__in=case_ids), agent_runs=runs,
        agent_calls=AgentCall.objects.filter(run__in=runs), outbox_events=events,
        deliveries=Delivery.objects.filter(event__in=events),
        outbound_emails=OutboundEmail.objects.filter(case__in=case_ids),
        scenarios=StoredScenario.objects.filter(source__in=cases.values("reference")), trace_files=traces)


@dataclass(frozen=True)
class SubjectExport:
    request_ref: str
    filename: str
    content: bytes
    report: dict


def _case_data(held: SubjectHeld, case: Case) -> dict:
    return {
        "reference": case.reference, "case_type": case.case_type, "title": case.title,
        "description": case.description, "status": case.status, "priority": case.priority,
        "created_at": case.created_at, "closed_at": case.closed_at,
        "named_as": list(held.mentions.filter(case=case).values("source_field", "source_agent", "source_tool",
                                                                "created_at")),
        "decisions": list(held.decisions.filter(case=case).values("outcome", "reason", "decided_at", "final")),
        "comments": list(held.comments.filter(case=case).values("body", "created_at")),
        "attachments": [{"name": a.original_name, "size": a.size, "sha256": a.sha256, "received_from": a.received_from,
                         "file": f"attachments/{case.reference}/{a.pk}-{a.original_name}"}
                        for a in held.attachments.filter(case=case)],
        "record": held.records(case),
        "agent_calls": list(held.agent_calls.filter(run__case=case).values(
            "run__pipeline", "name", "input", "output", "status", "created_at")),
        "outbox_events": list(held.outbox_events.filter(case=case).values("id", "type", "payload", "created_at")),
        "emails_sent": list(held.outbound_emails.filter(case=case).values("to", "subject", "body", "created_at")),
    }


def _reason(reason: str) -> str:
    return reason_on_record(reason, ask='Say why (the request is on record).')


@transaction.atomic
def subject_access_export(*, actor, entity: Entity, reason: str) -> SubjectExport:
    """The zip of everything held about `entity`'s subject, for an admin or a data-protection
    officer, with a reason; audited (the request's reference and the entity's id only)."""
    if not is_data_protection(actor):
        raise PermissionDenied("Only admins and data-protection officers may export what is held about a subject.")
    reason = _reason(reason)
    request_ref = f"SAR-{uuid.uuid4().hex[:12]}"
    held = subject_held(entity)
    cases = list(held.cases)
    data = {"request": {"reference": request_ref, "made_by": actor.get_username(), "made_at": timezone.now(),
                        "reason": reason},
            "subject": {"entity_id": entity.pk, "kind": entity.kind, "value": entity.display},
            "cases": [_case_data(held, case) for case in cases],
            "evaluation_scenarios": list(held.scenarios.values("suite", "scenario_id", "source", "text"))}
    files: list[tuple[str, Attachment]] = [
        (item["file"], attachment) for case_data in data["cases"]
        for item, attachment in zip(case_data["attachments"],
                                    held.attachments.filter(case__reference=case_data["reference"]), strict=True)]
    report = {"request": request_ref, "entity_id": entity.pk, "cases": [c.reference for c in cases],
              "included": {"cases": len(cases), "decisions": held.decisions.count(),
                           "comments": held.comments.count(), "attachments": len(files),
                           "entity mentions": held.mentions.count(), "agent calls": held.agent_calls.count(),
                           "outbox events": held.outbox_events.count(),
                           "e-mails sent": held.outbound_emails.count(),
                           "evaluation scenarios": held.scenarios.count(), "trace files": len(held.trace_files)},
              "missing_files": []}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, attachment in files:
            try:
                with attachment.file.open("rb") as f:
                    archive.writestr(name, f.read())
            except OSError:
                report["missing_files"].append(name)
        for path in held.trace_files:
            archive.write(path, f"traces/{path.name}")
        archive.writestr("subject.json", json.dumps(data, cls=DjangoJSONEncoder, indent=2, ensure_ascii=False))
        archive.writestr("report.json", json.dumps(report, indent=2))
    audit_record(actor=actor, action="subject_access.exported", obj=entity,
                 data={"request": request_ref, "entity_id": entity.pk, "reason": reason,
                       "included": report["included"]})
    return SubjectExport(request_ref=request_ref, filename=f"subject-access-{request_ref}.zip",
                         content=buffer.getvalue(), report=report)
