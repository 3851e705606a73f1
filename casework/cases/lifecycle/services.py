"""The one way a declared status changes: `lifecycle_transition`."""

from __future__ import annotations

import contextlib
from typing import Any

from django.apps import apps
from django.db import models, transaction

from audit.rowsql import row_get, row_update
from casework.cases.lifecycle.check import fact_check, transition_check
from casework.cases.lifecycle.table import Lifecycle, actor_kind, lifecycle_get
from casework.cases.sla import DONE_STATUSES


def _own_transaction():
    """A transaction for the move when the caller has none open; inside the caller's, nothing."""
    return contextlib.nullcontext() if transaction.get_connection().in_atomic_block else transaction.atomic()


def _case_of(record: models.Model):
    return record if record._meta.label == "cases.Case" else record.case


def lifecycle_transition(*, actor: Any, lifecycle: Lifecycle | str, record: models.Model, to: str,
                         reason: str = "", data: dict | None = None, save: tuple[str, ...] = (),
                         fact: models.Model | None = None) -> models.Model:
    """Move `record` to the state `to` of `lifecycle`, or refuse.

    A state that claims an effect outside Casework (State.fact) is entered only with `fact`,
    the record of that effect, which must be of the declared model and hold (an e-mail the
    server accepted, a run with a finished specialist): else a Conflict (code "no_fact")
    before anything is written. The move's audit entry names the record.

    Steps: lock the record's row; no change if it is there already; check the move against
    the table (transition_check: the move exists, and this kind of actor may make it); write
    the field (with `save`, other fields the caller set on `record`, in the same UPDATE);
    audit the move (from, to, who, reason); bring the shared case's status along to the new
    state's case_status, through the case's own table, unless a person resolved or closed the
    case (their word stands; the type's state may still move, e.g. a late report). Returns the
    locked, updated row; `record` is updated too.

    In a transaction of its own when called outside one. Inside the caller's it takes no
    savepoint (two round trips on every nested move, at every fraud run's end): a refusal is
    raised after the lock and before anything is written, so a caller may catch it and go on
    (the row stays locked until the caller's transaction ends); a database error in the lock
    or the writes marks the caller's transaction for rollback (Django's atomic without a
    savepoint), to its nearest savepoint if it has one.
    """
    from audit.services import audit_entry_build, audit_record_many
    from casework.cases.services import case_set_status, case_status_move

    with _own_transaction():
        lifecycle = lifecycle_get(lifecycle) if isinstance(lifecycle, str) else lifecycle
        model = apps.get_model(lifecycle.record)
        with transaction.atomic(savepoint=False):
            # The locking SELECT is compiled once per model (audit.rowsql.row_get): every move of
            # every run makes one, and the ORM's building of it was 7% of a worker's CPU.
            if model._meta.label == "cases.Case":
                locked = row_get(("lifecycle lock", model), lambda: model.objects.select_for_update(of=("self",)),
                                 record.pk)
                case_locked = True
            else:
                # The record and its case locked in one statement: the case's status follows below,
                # and re-reading it under a lock of its own was a second query per move. (A nullable
                # case would be an outer join, which FOR UPDATE may not lock: then the case is locked
                # when it moves, by case_set_status.)
                case_locked = not model._meta.get_field("case").null
                locked = row_get(("lifecycle lock", model), lambda: model.objects.select_for_update(
                    of=("self", "case") if case_locked else ("self",)).select_related("case"), record.pk)
        current = getattr(locked, lifecycle.field)
        if current == to and not save:
            return locked
        case = _case_of(locked)
        if current != to:
            transition_check(lifecycle, actor=actor, source=current, target=to, reference=case.reference)
            fact_check(lifecycle, target=to, fact=fact, reference=case.reference)
        # The writes: the row, its audit entry, the case's status.
        with transaction.atomic(savepoint=False):
            for name in save:
                setattr(locked, name, getattr(record, name))
            setattr(locked, lifecycle.field, to)
            fields = [lifecycle.field, *save]
            if any(f.name == "updated_at" for f in model._meta.concrete_fields):
                fields.append("updated_at")
            row_update(locked, fields)
            setattr(record, lifecycle.field, to)
            if current != to:
                # The move's entry and the case's status change go in one INSERT.
                entries = [audit_entry_build(actor=actor, action=lifecycle.audit_action, case=case, obj=locked,
                                             data={"from": current, "to": to, "from_label": lifecycle.label_of(current),
                                                   "to_label": lifecycle.label_of(to), "by": actor_kind(actor),
                                                   "reason": (reason or "")[:1000], **(data or {}),
                                                   **({"fact": f"{fact._meta.label}#{fact.pk}"} if fact is not None
                                                      else {})})]
                target = lifecycle.state(to).case_status
                if target and case.status not in DONE_STATUSES and case.status != target:
                    if case_locked:
                        case_status_move(actor=actor, case=case, status=target, entries=entries)
                    else:
                        case_set_status(actor=actor, case=case, status=target)
                audit_record_many(entries)
            return locked
