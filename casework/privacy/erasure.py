"""Erasure of a data subject (issue 42.2): a customer, an employee, a card or an e-mail address,
named by entities (casework.entities), removed or pseudonymised everywhere it is held.

Asking and approving:
  `erasure_request(actor, subjects, reason)`: an admin or a data-protection officer, with a
  reason. One subject named in at most ERASURE_FOUR_EYES_CASES cases runs at once (on commit);
  more than one subject, or more cases, is bulk and waits until `erasure_approve` by a second,
  different person (the database refuses an approver who asked, too).

Running (`erasure_run`, the Celery task's; every step in a transaction with the request's row
locked, so that a second delivery of the task waits and then finds the work done):
  1. Plan, once: the subjects' entities, widened to those their identifiers name (the e-mail
     entity of a customer's address, the cards on their account); the identifiers in clear
     (each entity's value, and what each case type's `Retention.identifiers` knows: a name, an
     address), kept encrypted on the request until the run ends; every case naming one of the
     entities, each marked:
       - kept: an open legal hold on the case or on an entity it names (nothing changes);
       - pseudonymised: its type has a legal duty to keep its records (fraud alerts and
         transaction investigations: AML, 5 years) and that period has not ended: the record,
         amounts, scores and the decision stay, and every identifier in it is replaced by the
         subject's pseudonym ("[erased subject 7]");
       - erased: the type's personal data is removed as retention removes it
         (retention.case_personal_data_remove: messages, raw e-mail, suggested replies, agent
         prompts, attachments ...), then what remains (the case's title, the decision's reason,
         every row on the case) is pseudonymised as above.
  2. The cases in batches of ERASURE_BATCH, `cursor` moving in each batch's transaction: a
     killed worker's run continues at the first batch not committed; a batch redone changes
     nothing (a pseudonym matches no identifier). Per batch: the rows of every model that leads
     to the cases (casework.privacy.rows), the trace files of their runs, their attachments, and
     their audit entries that quote the subject (tombstoned: casework.privacy.tombstones).
  3. Last, everything not tied to those cases: the types' records of the subject that belong
     to no case (Retention.subject_erase: an employee's absence records); every table
     searched for the subjects' strong identifiers (a customer or account row, an employee
     row, another subject's case quoting them; encrypted columns read and searched here), the
     entities themselves, the subject's Casework accounts (Retention.accounts, or an e-mail
     address of theirs: deactivated and pseudonymised, their ids kept, so the decisions and
     audit entries they made still point at them), audit entries anywhere, every trace file;
     then the request's own reason is pseudonymised, its identifiers emptied, and the
     erasure's entry written (the request's reference and counts, never the data).
  A request left approved or running without progress (a killed worker, a lost message) is
  sent again by the beat task's `erasure_sweep` (erasure_run.py), and continues at its cursor.
  Whatever a hold keeps stays whole, the subject's own records included (a held case needs the
  customer row it points at); the report says so, and why.

The report (`request.report`): per case what happened and why, per model the rows and fields
changed, what was removed (counts), files, audit entries, entities, and what was kept and why.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from audit.services import audit_record
from casework.cases.reasons import REASON_MAX_LENGTH, reason_on_record  # noqa: F401 (REASON_MAX_LENGTH re-exported)
from casework.entities.models import Entity, Mention
from casework.people.roles import is_data_protection
from casework.privacy.erasure_run import DUTY, ERASED, HELD
from casework.privacy.models import ErasureRequest

MAX_SUBJECTS = 100
MAX_ENTITIES_PER_SUBJECT = 20
__all__ = ["DUTY", "ERASED", "HELD", "erasure_approve", "erasure_request", "erasure_resume"]
S = ErasureRequest.Status


# --- asking and approving ------------------------------------------------------------------

def _reason(reason: str) -> str:
    return reason_on_record(reason, ask="Say why (the subject's request, its date and channel): it is on record.")


def _subject_ids(subjects: list[list[Entity | int]]) -> list[list[int]]:
    if not subjects or not isinstance(subjects, list | tuple):
        raise ValidationError({"subjects": "Name at least one subject: the entities that name them."})
    if len(subjects) > MAX_SUBJECTS:
        raise ValidationError({"subjects": f"At most {MAX_SUBJECTS} subjects per request."})
    out, seen = [], set()
    for subject in subjects:
        ids = [int(getattr(e, "pk", e)) for e in subject] if isinstance(subject, list | tuple) else []
        if not ids or len(ids) > MAX_ENTITIES_PER_SUBJECT:
            raise ValidationError({"subjects": f"Each subject is 1 to {MAX_ENTITIES_PER_SUBJECT} entities."})
        if seen & set(ids):
            raise ValidationError({"subjects": "An entity is named twice."})
        seen |= set(ids)
        out.append(ids)
    found = set(Entity.objects.filter(pk__in=seen).values_list("pk", flat=True))
    if seen - found:
        raise ValidationError({"subjects": f"No entities {sorted(seen - found)[:10]}."})
    return out


def _cases_naming(entity_ids) -> int:
    return Mention.objects.filter(entity__in=entity_ids).values("case").distinct().count()


@transaction.atomic
def erasure_request(*, actor, subjects: list[list[Entity | int]], reason: str,
                    now: datetime | None = None) -> ErasureRequest:
    """Ask to erase `subjects` (per subject, the entities naming them). It runs on commit, or,
    when bulk, once a second person approves (module docstring)."""
    if not is_data_protection(actor):
        raise PermissionDenied("Only admins and data-protection officers may ask for an erasure.")
    reason = _reason(reason)
    ids = _subject_ids(subjects)
    counts = [_cases_naming(s) for s in ids]
    four_eyes = len(ids) > 1 or max(counts) > settings.ERASURE_FOUR_EYES_CASES
    request = ErasureRequest(
        status=S.AWAITING_APPROVAL if four_eyes else S.APPROVED, reason=reason, requested_by=actor,
        requested_at=now or timezone.now(), four_eyes=four_eyes, entity_id=ids[0][0], subjects=ids,
        case_count=_cases_naming([pk for s in ids for pk in s]))
    if not four_eyes:
        request.approved_at = request.requested_at  # one person's request: no second approval needed
    request.full_clean(exclude=["identifiers"])
    request.save()
    # The reason stays off the audit trail (it may name the subject); the request row keeps it
    # until the run pseudonymises it.
    audit_record(actor=actor, action="erasure.requested", obj=request,
                 data={"request": request.reference, "subjects": len(ids), "cases": request.case_count,
                       "four_eyes": four_eyes})
    if not four_eyes:
        _enqueue(request)
    return request


@transaction.atomic
def erasure_approve(*, actor, request: ErasureRequest, now: datetime | None = None) -> ErasureRequest:
    """The second person's approval of a bulk request; it runs on commit."""
    if not is_data_protection(actor):
        raise PermissionDenied("Only admins and data-protection officers may approve an erasure.")
    request = ErasureRequest.objects.select_for_update().get(pk=request.pk)
    if request.requested_by_id == actor.pk:
        raise PermissionDenied("Four eyes: a second, different person approves an erasure.")
    if request.status != S.AWAITING_APPROVAL:
        raise ValidationError({"status": f"This request is {request.get_status_display().lower()}: "
                                         "only one awaiting approval can be approved."})
    request.status, request.approved_by, request.approved_at = S.APPROVED, actor, now or timezone.now()
    request.save(update_fields=["status", "approved_by", "approved_at"])
    audit_record(actor=actor, action="erasure.approved", obj=request, data={"request": request.reference})
    _enqueue(request)
    return request


def _enqueue(request: ErasureRequest) -> None:
    from casework.privacy.tasks import privacy_erasure_run

    transaction.on_commit(lambda pk=request.pk: privacy_erasure_run.delay(pk))


def erasure_cases_addressed(user) -> list[int]:
    """The cases whose references a data-protection officer may read (casework.cases.visibility
    ADDRESSED): those erasure requests' plans cover, whose reports name them. Nothing for anyone
    else; the cases themselves stay behind the visibility rule (a 404 outside their teams)."""
    if not is_data_protection(user):
        return []
    return sorted({item[0] for plan in ErasureRequest.objects.exclude(plan={}).values_list("plan", flat=True)
                   for item in (plan or {}).get("cases", [])})


@transaction.atomic
def erasure_resume(*, actor, request: ErasureRequest) -> ErasureRequest:
    """Start again a request whose run failed or whose worker died: it continues at its cursor."""
    if not is_data_protection(actor):
        raise PermissionDenied("Only admins and data-protection officers may resume an erasure.")
    request = ErasureRequest.objects.select_for_update().get(pk=request.pk)
    if request.status not in (S.RUNNING, S.FAILED, S.APPROVED):
        raise ValidationError({"status": f"This request is {request.get_status_display().lower()}."})
    audit_record(actor=actor, action="erasure.resumed", obj=request,
                 data={"request": request.reference, "cursor": request.cursor})
    _enqueue(request)
    return request
