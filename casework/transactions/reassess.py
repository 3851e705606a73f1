"""Re-assessment: a rule hit that joins a card's case after its investigation was started
raises the stakes, and the investigation is run again on that hit's transaction.

A card-testing case opens on its first hit (a 1 EUR test charge) and its investigation
assesses that charge; the 949 EUR purchase that joins the case later is what matters, and
was never assessed. A joined hit raises the stakes when its transaction is not among those
the investigation assessed and

  - its amount (in the settlement currency) is larger than any it assessed, by at least
    TXN_REASSESS_MIN_INCREASE (100: the 2 EUR test charge after the 1 EUR one is not), or
  - it is a block rule's hit, and no transaction it assessed was.

Then (`investigation_reassess_if_raised`, with the investigation's row locked):
  - an investigation the planner is still working on (Pending, In progress) is left alone:
    the run's end (the pipeline's finish) asks again and re-assesses then;
  - otherwise (Completed, Inconclusive, Failed, Timed out; the case not decided) the system
    moves it to In progress (the lifecycle's declared move), notes the transaction on its
    state, audits `txn.investigation_reassessed` (which hit, why, the stakes it had assessed)
    and queues a new run of the planner: a new round (state "assessment" + 1) on that
    transaction, with every tool run again; the earlier rounds' verdicts are kept in the
    state ("assessments") and their tool executions stay recorded under their round.

Both callers lock the investigation's row before reading its status, and the hits are
committed before the evaluation asks, so a hit that joins while a run ends is re-assessed
by one of the two, never by both, never by neither.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import BooleanField, ExpressionWrapper, Q
from django.db.models.functions import Coalesce

from audit.services import audit_record

ACTOR = "system"


def assessed_ids(state: dict, investigation) -> list[str]:
    """The transaction ids the investigation's rounds assessed (or are about to)."""
    ids = list(state.get("assessed") or [state.get("transaction_id") or investigation.transaction.transaction_id])
    pending = (state.get("reassess") or {}).get("transaction_id")
    return ids + [pending] if pending and pending not in ids else ids


def stakes_raising_hit(investigation):
    """(hit, top, blocked): the case's live hit that raises the stakes most (a block first,
    then the largest amount) or None; the largest amount assessed; whether a block rule's hit
    was assessed. Reads the case's hits only (indexed by case)."""
    from casework.transactions.models import Transaction
    from casework.transactions.monitoring.models import RuleHit, RuleVersion

    ids = assessed_ids(investigation.state or {}, investigation)
    amount = Coalesce("settlement_amount", "amount")
    assessed = Transaction.objects.filter(transaction_id__in=ids)
    top = max((a for a in assessed.annotate(value=amount).values_list("value", flat=True)), default=Decimal(0))
    blocked = RuleHit.objects.filter(case_id=investigation.case_id, transaction__transaction_id__in=ids,
                                     action=RuleVersion.Action.BLOCK).exists()
    larger = Q(value__gt=top, value__gte=top + settings.TXN_REASSESS_MIN_INCREASE)
    raises = larger if blocked else larger | Q(action=RuleVersion.Action.BLOCK)
    return (RuleHit.objects.filter(case_id=investigation.case_id, mode=RuleVersion.Mode.LIVE)
            .exclude(transaction__transaction_id__in=ids)
            .annotate(value=Coalesce("transaction__settlement_amount", "transaction__amount"),
                      block=ExpressionWrapper(Q(action=RuleVersion.Action.BLOCK), output_field=BooleanField()))
            .filter(raises).select_related("transaction", "version__rule")
            .order_by("-block", "-value", "id").first()), top, blocked


@transaction.atomic
def investigation_reassess_if_raised(*, case_id: int):
    """Re-assess the case's investigation on the hit that raises the stakes, if one does and
    no run is working on it (see the module). Returns the queued run, or None."""
    from casework.cases.sla import DONE_STATUSES
    from casework.transactions.models import Investigation
    from casework.transactions.services import PIPELINE
    from casework.transactions.states import ACTIVE, InvestigationStatus, investigation_transition

    investigation = (Investigation.objects.select_for_update(of=("self",)).select_related("case", "transaction")
                     .filter(case_id=case_id).first())
    if investigation is None or investigation.status in ACTIVE or investigation.case.status in DONE_STATUSES:
        return None
    hit, top, blocked = stakes_raising_hit(investigation)
    if hit is None:
        return None
    txn = hit.transaction
    value = txn.settlement_amount if txn.settlement_amount is not None else txn.amount
    why = (f"{hit.version.rule.name} v{hit.version.number} ({hit.action}) matched {txn.transaction_id}, "
           + (f"{value} in the settlement currency, more than the {top} assessed so far"
              if value >= top + settings.TXN_REASSESS_MIN_INCREASE and value > top else "a block rule's hit, where none assessed so far was one"))
    previous = investigation.status
    investigation.state = {**investigation.state, "reassess": {"transaction_id": txn.transaction_id, "why": why}}
    investigation_transition(actor=ACTOR, investigation=investigation, to=InvestigationStatus.IN_PROGRESS,
                             reason=f"Re-assessed: {why}.", save=("state",))
    audit_record(actor=ACTOR, action="txn.investigation_reassessed", case=investigation.case, obj=investigation,
                 data={"transaction_id": txn.transaction_id, "amount": str(value), "rule": hit.version.rule.name,
                       "version": hit.version.number, "action": hit.action, "why": why, "was": previous,
                       "assessed": assessed_ids(investigation.state, investigation)[:-1],
                       "assessed_top_amount": str(top), "assessed_block": blocked})
    from agents.tasks import pipeline_enqueue

    return pipeline_enqueue(case=investigation.case, pipeline=PIPELINE, mode="investigate", actor=ACTOR,
                            initial_state={"investigation_id": investigation.pk, "reassess": txn.transaction_id})
