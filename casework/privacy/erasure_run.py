"""Running an erasure request (casework.privacy.erasure says what it does and why): the plan,
the batches of cases, the sweep of everything else, and the report. The Celery task
(casework.privacy.tasks) calls `erasure_run`; asking and approving live in erasure.py."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from agents.evals.models import StoredScenario
from audit.services import audit_record
from casework.cases.models import Case
from casework.cases.types import CASE_TYPES
from casework.entities.kinds import normalise
from casework.entities.models import Entity, Mention
from casework.privacy import erasure_files, rows
from casework.privacy.models import ErasureRequest, LegalHold
from casework.privacy.retention import case_personal_data_remove, open_holds_q
from casework.privacy.scrub import Identifiers, scrub_all
from casework.privacy.tombstones import audit_tombstone

ERASED, DUTY, HELD = "erased", "pseudonymised (legal duty)", "kept (legal hold)"
S = ErasureRequest.Status


# --- planning ------------------------------------------------------------------------------

def _type_hooks(hook: str):
    """Each case type's Retention hook of this name (identifiers, accounts, subject_erase)."""
    for case_type in CASE_TYPES.values():
        found = getattr(case_type.retention, hook, None) if case_type.retention is not None else None
        if found is not None:
            yield found


def _type_identifiers(entity: Entity) -> list[str]:
    return [value for hook in _type_hooks("identifiers") for value in hook(entity)]


def subject_accounts(entity_ids: list[int], ids: Identifiers) -> list[int]:
    """The Casework user accounts of a subject: those a type links to one of their entities (an
    employee's login), and those whose e-mail address is one of the subject's."""
    found = {pk for entity in Entity.objects.filter(pk__in=entity_ids)
             for hook in _type_hooks("accounts") for pk in hook(entity)}
    emails = [value for value in ids.strong if "@" in value]
    if emails:
        q = Q()
        for email in emails:
            q |= Q(email__iexact=email)
        found |= set(get_user_model().objects.filter(q).values_list("pk", flat=True))
    return sorted(found)


def _own_identifiers(entity: Entity) -> list[str]:
    # An e-mail entity holds a keyed hash and a masked display: neither is the address.
    if entity.kind == "email" or entity.value.startswith("erased:"):
        return []
    return [entity.value, entity.display]


def _related_entities(values: list[str], known: set[int]) -> set[int]:
    """Entities the identifiers themselves name: the address's e-mail entity, the account's
    and customer's, and the cards on the account."""
    found = set()
    for value in values:
        for kind in ("email", "account", "customer", "card"):
            try:
                stored, _ = normalise(kind, value)
            except ValidationError:
                continue
            found |= set(Entity.objects.filter(kind=kind, value=stored).values_list("pk", flat=True))
        if "@" not in value and " " not in value.strip():
            found |= set(Entity.objects.filter(kind="card", value__startswith=f"{value}/").values_list("pk", flat=True))
    return found - known


def subject_identifiers(entity_ids: list[int], *, pseudonym: str) -> tuple[list[int], Identifiers]:
    """The subject's entities (widened to those their identifiers name, a few rounds) and the
    identifiers in clear to replace."""
    entity_ids = list(dict.fromkeys(entity_ids))
    values: list[str] = []
    names: list[str] = []
    todo = list(entity_ids)
    for _ in range(3):
        if not todo:
            break
        new_values = []
        for entity in Entity.objects.filter(pk__in=todo):
            typed = _type_identifiers(entity)
            new_values += _own_identifiers(entity) + typed
            # What a type found that is neither an address nor a code is a person's name.
            names += [v for v in typed if "@" not in v and any(c.isspace() for c in v.strip())]
        values += new_values
        todo = sorted(_related_entities(new_values, set(entity_ids)))
        entity_ids += todo
    return entity_ids, Identifiers.build(pseudonym=pseudonym, values=values, names=names)


def _classify(case: Case, *, now: datetime, holds: dict[int, list[int]]) -> tuple[str, str]:
    if case.pk in holds:
        return HELD, "legal hold " + ", ".join(f"#{h}" for h in holds[case.pk])
    retention = CASE_TYPES[case.case_type].retention if case.case_type in CASE_TYPES else None
    duty = retention.legal_duty if retention is not None else ""
    if duty:
        policy = settings.RETENTION.get(case.case_type)
        days = policy["days"] if policy else 0
        if case.closed_at is None or case.closed_at > now - timedelta(days=days):
            return DUTY, duty
    return ERASED, "no hold and no legal duty to keep it"


def _holds_by_case(case_ids: list[int], now: datetime) -> dict[int, list[int]]:
    held: dict[int, list[int]] = {}
    open_ = LegalHold.objects.filter(open_holds_q(now))
    for case_id, pk in open_.filter(case__in=case_ids).values_list("case_id", "pk"):
        held.setdefault(case_id, []).append(pk)
    for case_id, pk in open_.filter(entity__mentions__case__in=case_ids).values_list("entity__mentions__case", "pk"):
        if case_id in case_ids:
            held.setdefault(case_id, []).append(pk)
    return held


def _plan(request: ErasureRequest, now: datetime) -> None:
    subjects, all_entities, owner, accounts = [], [], {}, {}
    for i, entity_ids in enumerate(request.subjects, start=1):
        pseudonym = (f"[erased subject {request.pk}]" if len(request.subjects) == 1
                     else f"[erased subject {request.pk}.{i}]")
        entities, ids = subject_identifiers(entity_ids, pseudonym=pseudonym)
        subjects.append(ids.as_json())
        all_entities += entities
        for pk in entities:
            owner.setdefault(str(pk), i - 1)
        for pk in subject_accounts(entities, ids):
            accounts.setdefault(str(pk), i - 1)
    case_ids = sorted(set(Mention.objects.filter(entity__in=all_entities).values_list("case_id", flat=True)))
    holds = _holds_by_case(case_ids, now)
    cases = []
    for case in Case.objects.filter(pk__in=case_ids).order_by("pk").only("pk", "reference", "case_type", "closed_at"):
        what, why = _classify(case, now=now, holds=holds)
        cases.append([case.pk, case.reference, what, why])
    request.identifiers = {"subjects": subjects}
    # Entity id -> the index of the subject it names (whose pseudonym it takes).
    # User id -> the index of the subject whose Casework account it is.
    request.plan = {"entities": owner, "accounts": accounts, "cases": cases, "planned_at": now.isoformat()}
    request.report = {"request": request.reference, "subjects": len(subjects),
                      "cases": {ERASED: {}, DUTY: {}, HELD: {}}, "changed": {}, "removed": {}, "files": {},
                      "audit": {}, "entities": {}, "kept": [], "batches": 0}


# --- running -------------------------------------------------------------------------------

def _add(counter: dict, key: str, n: int) -> None:
    if n:
        counter[key] = counter.get(key, 0) + n


def _changed(report: dict, place: rows.Place, result: tuple[int, set[str]]) -> None:
    n, fields = result
    if n:
        entry = report["changed"].setdefault(place.label, {"rows": 0, "fields": []})
        entry["rows"] += n
        entry["fields"] = sorted(set(entry["fields"]) | fields)


def _subjects(request: ErasureRequest) -> list[Identifiers]:
    return [Identifiers.from_json(s) for s in request.identifiers["subjects"]]


def _names_subject(subjects: list[Identifiers], *, weak: bool):
    return lambda actor, data: scrub_all([actor, data], subjects, weak=weak)[1]


def _batch(request: ErasureRequest, batch: list[list], now: datetime) -> None:
    """One batch of the plan's cases (module docstring, step 2), in the caller's transaction."""
    report, subjects, ref = request.report, _subjects(request), request.reference
    # A hold placed since the plan was made keeps its case too.
    holds = _holds_by_case([c[0] for c in batch], now)
    work = []
    for item in batch:
        case_id, reference, what, why = item
        if case_id in holds and what != HELD:
            what, why = HELD, "legal hold " + ", ".join(f"#{h}" for h in holds[case_id])
            item[2:] = [what, why]
        report["cases"][what][reference] = why
        if what != HELD:
            work.append((case_id, what))
    ids = [case_id for case_id, _ in work]
    if not ids:
        return
    erased = [case_id for case_id, what in work if what == ERASED]
    for case in Case.objects.filter(pk__in=erased):
        retention = CASE_TYPES[case.case_type].retention if case.case_type in CASE_TYPES else None
        if retention is not None:
            for name, n in case_personal_data_remove(case, retention.shared).items():
                _add(report["removed"], name, n)
    _add(report["files"], "attachments deleted", erasure_files.attachments_delete(erased))
    changed, kept = erasure_files.attachments_pseudonymise([i for i in ids if i not in erased], subjects)
    _add(report["files"], "attachments pseudonymised", changed)
    report["kept"] += [{"what": name, "why": "legal duty; a binary file's text cannot be pseudonymised"}
                       for name in kept]
    for place in rows.places():
        if place.case_path:
            _changed(report, place, rows.scrub_rows(place, rows.case_rows(place, ids), subjects, weak=True, ref=ref))
    scenarios = rows.place_of(StoredScenario)
    if scenarios is not None:
        refs = list(Case.objects.filter(pk__in=ids).values_list("reference", flat=True))
        source_rows = StoredScenario.objects.filter(source__in=refs).values("pk", *scenarios.fields)
        _changed(report, scenarios, rows.scrub_rows(scenarios, source_rows, subjects, weak=True, ref=ref))
    _add(report["files"], "trace files rewritten",
         erasure_files.traces_scrub(erasure_files.case_trace_files(ids), subjects, weak=True))
    tombstoned = audit_tombstone(entries=Q(case_id__in=ids), request_ref=ref,
                                 names_subject=_names_subject(subjects, weak=True))
    for key, n in tombstoned.as_dict().items():
        _add(report["audit"], key, n)


def _held_case_ids(request: ErasureRequest) -> list[int]:
    return [c[0] for c in request.plan["cases"] if c[2] == HELD]


def _subject_records(request: ErasureRequest, entities, report: dict) -> None:
    """The types' records of the subject that belong to no case (Retention.subject_erase)."""
    for entity in entities:
        for hook in _type_hooks("subject_erase"):
            for name, n in hook(entity).items():
                _add(report["removed"], name, n)


def _accounts(request: ErasureRequest, report: dict, *, held: bool, actor: Any) -> None:
    """The subject's Casework accounts: deactivated (sessions ended, tokens revoked, open cases
    back to the queue) and pseudonymised (username `erased-<request>-<id>`, no name, no e-mail,
    no usable password). The row and its id stay, so every audit entry and decision naming the
    account still points at it (module casework.privacy.erasure: what is kept and why)."""
    from casework.people.services import user_pseudonymise

    owner = request.plan.get("accounts") or {}
    if not owner:
        return
    if held:
        report["kept"].append({"what": f"{len(owner)} Casework account(s) of the subject",
                               "why": "a legal hold on a case that names them"})
        return
    from casework.cases.models import Comment, Decision

    for pk in owner:
        user = get_user_model().objects.filter(pk=int(pk)).first()
        if user is None or user.username.startswith("erased-"):
            continue
        user_pseudonymise(actor=actor, user=user, username=f"erased-{request.reference}-{user.pk}",
                          request_ref=request.reference)
        _add(report["entities"], "accounts deactivated and pseudonymised", 1)
    ids = [int(pk) for pk in owner]
    decided = Decision.objects.filter(decided_by__in=ids).count()
    commented = Comment.objects.filter(author__in=ids).count()
    report["kept"].append({
        "what": f"what the subject did as a Casework user: {decided} decision(s) and {commented} comment(s) "
                "by their account (on any case, a release's go / no-go included), and the audit entries "
                "they made: their user id, and the username they had in the entries' actor field",
        "why": "who did what stays verifiable (the chain commits to the actor; GDPR Art. 17(3)(b) and (e): "
               "records of decisions taken under a legal obligation or for legal claims); the account "
               "itself is deactivated and reads as erased-<request>-<id>"})


def _kept_decisions(request: ErasureRequest, report: dict) -> None:
    """What an erased or pseudonymised case keeps by design, counted: its decisions."""
    from casework.cases.models import Decision

    done = [c[0] for c in request.plan["cases"] if c[2] != HELD]
    n = Decision.objects.filter(case_id__in=done).count() if done else 0
    if n:
        report["kept"].append({
            "what": f"{n} decision(s) on the subject's cases: outcome, date and who decided; their reasons "
                    "with the subject's identifiers replaced by the pseudonym",
            "why": "the record of what was decided and why (the issue's rule: decisions stay, counts stay)"})


def _finish(request: ErasureRequest, actor: Any, now: datetime) -> None:
    """Everything not tied to the subject's cases (module docstring, step 3), and the end."""
    report, subjects, ref = request.report, _subjects(request), request.reference
    held = _held_case_ids(request)
    if not held:
        # First, while the entities and the rows they name still hold their values: the types
        # find the subject's own records (an employee's absences) by them.
        _subject_records(request, Entity.objects.filter(pk__in=[int(pk) for pk in request.plan["entities"]]),
                         report)
    for place in rows.places():
        if held and not place.case_path:
            # A held case still points at the subject's own records (a customer, an account).
            n = rows.held_subject_rows(place, subjects)
            if n:
                report["kept"].append({"what": f"{place.label}: {n} rows naming the subject",
                                       "why": "a legal hold on a case that names them"})
            continue
        _changed(report, place, rows.sweep(place, subjects, exclude_case_ids=held, ref=ref))
    entities = Entity.objects.filter(pk__in=[int(pk) for pk in request.plan["entities"]]).exclude(
        value__startswith="erased:")
    if held:
        report["kept"].append({"what": f"{entities.count()} entities naming the subject",
                               "why": "a legal hold on a case that names them"})
    else:
        owner = request.plan["entities"]
        for entity in entities:
            Entity.objects.filter(pk=entity.pk).update(value=f"erased:{ref}:{entity.pk}",
                                                       display=subjects[owner[str(entity.pk)]].pseudonym)
            _add(report["entities"], "pseudonymised", 1)
    _accounts(request, report, held=bool(held), actor=actor)
    _kept_decisions(request, report)
    terms = sorted({t for ids in subjects for t in ids.search_terms()})
    anywhere = Q()
    for term in terms:
        anywhere |= Q(data__icontains=term) | Q(actor__icontains=term)
    if anywhere:
        tombstoned = audit_tombstone(entries=anywhere & ~Q(case_id__in=held), request_ref=ref,
                                     names_subject=_names_subject(subjects, weak=False))
        for key, n in tombstoned.as_dict().items():
            _add(report["audit"], key, n)
    _add(report["files"], "trace files rewritten", erasure_files.trace_dir_sweep(subjects))
    reason, _ = scrub_all(request.reason, subjects, weak=True)
    request.reason = reason
    request.identifiers = {}
    request.status, request.finished_at = S.DONE, now
    summary = {"request": ref, "batches": request.batches,
               "cases": {k: len(v) for k, v in report["cases"].items()},
               "rows changed": sum(v["rows"] for v in report["changed"].values()),
               **report["audit"]}
    audit_record(actor=actor, action="erasure.completed", obj=request, data=summary)


def erasure_run(*, request_id: int, now: datetime | None = None) -> ErasureRequest:
    """Run (or continue) an approved request to its end: the plan, each batch and the finish
    each commit on their own with the request's row locked, so a second delivery of the task
    waits, then finds the work done; a killed worker's successor starts at the cursor."""
    while True:
        with transaction.atomic():
            request = ErasureRequest.objects.select_for_update().get(pk=request_id)
            if request.status in (S.AWAITING_APPROVAL, S.DONE):
                return request
            now_ = now or timezone.now()
            request.status, request.error = S.RUNNING, ""
            cases = request.plan.get("cases")
            if cases is None:
                request.started_at = now_
                _plan(request, now_)
                audit_record(actor="system", action="erasure.started", obj=request,
                             data={"request": request.reference, "cases": len(request.plan["cases"]),
                                   "entities": len(request.plan["entities"])})
            elif request.cursor < len(cases):
                batch = cases[request.cursor:request.cursor + settings.ERASURE_BATCH]
                _batch(request, batch, now_)
                request.cursor += len(batch)
                request.batches += 1
                request.report["batches"] = request.batches
            else:
                _finish(request, request.approved_by or request.requested_by, now_)
            request.progress_at = now_
            request.save()
            if request.status == S.DONE:
                return request


def erasure_sweep(*, now: datetime, send: Callable[[int], object]) -> list[str]:
    """The beat task's pass: send again every request that should be running and has not moved
    for ERASURE_STALE_AFTER_SECONDS (its worker killed mid-batch, its task message lost); it
    continues at its cursor. Returns the references sent.

    A request counts as stale when it is approved or running and its last step (`progress_at`,
    else its approval) is older than that. A worker inside a batch holds the request's row
    locked, so it is skipped (SKIP LOCKED on PostgreSQL), never sent twice. Each one sent gets
    `progress_at = now`, so it waits a full period before the next wake-up, and an audit entry
    `erasure.resumed` (actor system, the cursor, why). A duplicate delivery costs nothing: the
    run takes the row's lock per step and reads the cursor afresh."""
    stale = now - timedelta(seconds=settings.ERASURE_STALE_AFTER_SECONDS)
    sent = []
    with transaction.atomic():
        requests = (ErasureRequest.objects.select_for_update(skip_locked=True)
                    .filter(status__in=(S.APPROVED, S.RUNNING))
                    .filter(Q(progress_at__lt=stale) | Q(progress_at__isnull=True, approved_at__lt=stale))
                    .order_by("pk"))
        for request in requests:
            since = request.progress_at or request.approved_at
            request.progress_at = now
            request.save(update_fields=["progress_at"])
            audit_record(actor="system", action="erasure.resumed", obj=request,
                         data={"request": request.reference, "cursor": request.cursor, "status": request.status,
                               "why": f"no progress since {since.isoformat()}"})
            transaction.on_commit(lambda pk=request.pk: send(pk))
            sent.append(request.reference)
    return sent


def erasure_failed(*, request_id: int, error: BaseException) -> None:
    """Mark a run failed (it resumes at its cursor), audited: the kind of error only, since a
    database error's message may quote the values it was given."""
    with transaction.atomic():
        request = ErasureRequest.objects.select_for_update().filter(
            pk=request_id, status__in=(S.APPROVED, S.RUNNING)).first()
        if request is None:
            return
        request.status = S.FAILED
        request.error = f"{type(error).__name__} (see the worker's log); resume to continue."
        request.save(update_fields=["status", "error"])
        audit_record(actor="system", action="erasure.failed", obj=request,
                     data={"request": request.reference, "cursor": request.cursor, "error": type(error).__name__})
