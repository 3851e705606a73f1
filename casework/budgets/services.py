"""The writes of budgets besides the reservation itself (casework/budgets/ledger.py): a lead's
override of one case's budget (which resumes the runs waiting for it), stopping a run that
waits, a type's budget from the admin, the 80% warning and the record of a refusal.
Each is audited in its own transaction."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from agents.models import AgentRun, RunPause
from audit.services import audit_record
from casework.budgets.commit import durable
from casework.budgets.limits import to_musd, type_limits, usd_text
from casework.budgets.models import CaseBudget, CaseTypeBudget
from casework.cases.models import Case
from casework.cases.reasons import REASON_MAX_LENGTH, reason_on_record  # noqa: F401 (REASON_MAX_LENGTH re-exported)
from casework.cases.visibility import user_leads
from casework.errors import Conflict

# Far above any real case; keeps a typo from meaning "unlimited" by overflow.
USD_MAX = Decimal("1000000")
TOKENS_MAX = 10**12


def _may_change(actor, case: Case) -> None:
    if not isinstance(actor, User) or not user_leads(actor, case):
        raise PermissionDenied(f"Only a lead of a team that owns {case.type_info.label.lower()} cases "
                               "(or an admin) may change a case's budget or stop its runs.")


def _reason(reason: str) -> str:
    return reason_on_record(reason)


def _usd(value) -> int | None:
    if value in (None, ""):
        return None
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        raise ValidationError({"limit_usd": "A number of US dollars, such as 12.50."}) from None
    if not amount.is_finite() or amount < 0 or amount > USD_MAX:
        raise ValidationError({"limit_usd": f"Between 0 and {USD_MAX:,} US dollars, or empty for no limit."})
    return to_musd(amount)


def _tokens(value) -> int | None:
    if value in (None, ""):
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= TOKENS_MAX:
        raise ValidationError({"limit_tokens": f"A whole number of tokens between 0 and {TOKENS_MAX:,}, "
                                               "or empty for no limit."})
    return value


def budget_for_case(case: Case, *, lock: bool = False) -> CaseBudget:
    """The case's ledger row, made from its type's budget if the case was never charged."""
    rows = CaseBudget.objects.select_for_update() if lock else CaseBudget.objects
    budget = rows.filter(case=case).first()
    if budget is None:
        limits = type_limits(case.case_type)
        CaseBudget.objects.get_or_create(case=case, defaults={"case_type": case.case_type,
                                                              "limit_musd": limits.musd,
                                                              "limit_tokens": limits.tokens})
        budget = rows.get(case=case)
    return budget


@transaction.atomic
def budget_set(*, actor, case: Case, limit_usd, limit_tokens, reason: str) -> CaseBudget:
    """A lead sets this case's budget (empty: no limit of that kind). Runs waiting in "Budget
    reached" are put back in the queue when the new budget leaves room (they meet it again if not)."""
    _may_change(actor, case)
    reason = _reason(reason)
    musd, tokens = _usd(limit_usd), _tokens(limit_tokens)
    budget = budget_for_case(case, lock=True)
    before = {"limit_usd": usd_text(budget.limit_musd), "limit_tokens": budget.limit_tokens}
    budget.limit_musd, budget.limit_tokens, budget.overridden = musd, tokens, True
    resumed = _after_limits_changed(actor, budget)
    audit_record(actor=actor, action="budget.changed", case=case, obj=budget,
                 data={"from": before, "to": {"limit_usd": usd_text(musd), "limit_tokens": tokens},
                       "reason": reason, "runs_resumed": resumed})
    return budget


def _after_limits_changed(actor, budget: CaseBudget) -> list[int]:
    """Save the new limits; clear the warning and the "reached" mark where the budget now leaves
    room, and resume the runs that waited for it. Returns the resumed runs' ids."""
    from django.conf import settings

    spent = CaseBudget(spent_musd=budget.spent_musd, spent_tokens=budget.spent_tokens, limit_musd=budget.limit_musd,
                       limit_tokens=budget.limit_tokens)
    room = _room(budget)
    share = spent.share()
    if share is None or share < settings.CASE_BUDGET_WARN_RATIO:
        budget.warned_at = None
    resumed: list[int] = []
    if room:
        budget.reached_at = None
        resumed = _resume_runs(actor, budget.case_id)
    CaseBudget.objects.filter(pk=budget.pk).update(
        limit_musd=budget.limit_musd, limit_tokens=budget.limit_tokens, overridden=budget.overridden,
        warned_at=budget.warned_at, reached_at=budget.reached_at)
    return resumed


def _room(budget: CaseBudget) -> bool:
    return (budget.limit_musd is None or budget.spent_musd + budget.reserved_musd < budget.limit_musd) and (
        budget.limit_tokens is None or budget.spent_tokens + budget.reserved_tokens < budget.limit_tokens)


def budget_room_made(*, case_id: int) -> list[int]:
    """Reserved headroom came back without a lead (a gone process's hold, casework/budgets/holds.py):
    a case marked at its budget that now has room loses the mark, and its runs waiting in
    "Budget reached" go back to the queue. In the caller's transaction; returns the runs let go."""
    budget = CaseBudget.objects.select_for_update().filter(case_id=case_id, reached_at__isnull=False).first()
    if budget is None or not _room(budget):
        return []
    CaseBudget.objects.filter(pk=budget.pk).update(reached_at=None)
    return _resume_runs("system", case_id)


def _resume_runs(actor, case_id: int) -> list[int]:
    """Let go of the case's budget pauses (agents.runtime.pause.pause_release, each audited):
    each run goes back to the queue once nothing else of it waits, and on from its saved step;
    the calls that were refused are made then. Returns the runs let go."""
    from agents.runtime.pause import pause_release

    released = []
    for pause in RunPause.objects.select_for_update().select_related("run", "case").filter(
            case_id=case_id, kind=RunPause.Kind.BUDGET, status=RunPause.Status.PENDING).order_by("pk"):
        pause_release(pause=pause, actor=actor, answer="The case's budget was raised.")
        released.append(pause.run_id)
    return released


@transaction.atomic
def budget_run_stop(*, actor, run: AgentRun, reason: str) -> AgentRun:
    """A lead ends a run that waits in "Budget reached" instead of raising the budget
    (agents.runtime.pause.pause_stop: audited). Its saved results stay; it is not resumed."""
    from agents.runtime.pause import NotPending, pause_stop

    if run.case is None:
        raise Conflict(f"Run #{run.pk} belongs to no case.", code="run_no_case")
    _may_change(actor, run.case)
    reason = _reason(reason)
    pause = RunPause.objects.select_for_update().filter(run=run, kind=RunPause.Kind.BUDGET,
                                                         status=RunPause.Status.PENDING).first()
    try:
        if pause is None:
            raise NotPending
        pause_stop(pause=pause, actor=actor, status=RunPause.Status.CANCELLED, run_status=AgentRun.Status.STOPPED,
                   reason=f"Stopped at the case's budget: {reason}")
    except NotPending:
        run.refresh_from_db()
        raise Conflict(f"Run #{run.pk} is not waiting for its budget (it is {run.get_status_display().lower()}).",
                       code="run_not_waiting") from None
    run.refresh_from_db()
    return run


@transaction.atomic
def case_type_budget_set(*, actor, case_type: str, limit_usd, limit_tokens) -> CaseTypeBudget:
    """The admin sets a case type's budget: every case of the type without a lead's override
    takes it (their waiting runs resume where it leaves room)."""
    musd, tokens = _usd(limit_usd), _tokens(limit_tokens)
    row, _ = CaseTypeBudget.objects.select_for_update().get_or_create(case_type=case_type)
    before = {"limit_usd": str(row.limit_usd) if row.limit_usd is not None else None,
              "limit_tokens": row.limit_tokens}
    row.limit_usd = None if musd is None else Decimal(musd) / Decimal(1_000_000)
    row.limit_tokens = tokens
    row.updated_by = actor if isinstance(actor, User) else None
    row.full_clean()
    row.save()
    changed = 0
    for budget in CaseBudget.objects.select_for_update().filter(case_type=case_type, overridden=False):
        budget.limit_musd, budget.limit_tokens = musd, tokens
        _after_limits_changed(actor, budget)
        changed += 1
    audit_record(actor=actor, action="budget.type_changed", obj=row,
                 data={"case_type": case_type, "from": before,
                       "to": {"limit_usd": usd_text(musd), "limit_tokens": tokens}, "cases_updated": changed})
    return row


def budget_warn(*, case_id: int) -> bool:
    """Warn the case's assignee, once, that its spend passed CASE_BUDGET_WARN_RATIO of a limit
    (a conditional UPDATE: of parallel calls that see it, one warns). Audited; False if already done."""
    from casework.cases.notifications.services import notification_send

    with transaction.atomic():
        durable()
        if not CaseBudget.objects.filter(pk=case_id, warned_at__isnull=True).update(warned_at=timezone.now()):
            return False
        budget = CaseBudget.objects.select_related("case__assignee").get(pk=case_id)
        case = budget.case
        spent = f"{usd_text(budget.spent_musd)} and {budget.spent_tokens:,} tokens"
        limit = f"{usd_text(budget.limit_musd)} / {budget.limit_tokens:,} tokens" if budget.limit_tokens is not None \
            else usd_text(budget.limit_musd)
        audit_record(actor="system", action="budget.warned", case=case, obj=budget,
                     data={"spent_usd": usd_text(budget.spent_musd), "spent_tokens": budget.spent_tokens,
                           "limit_usd": usd_text(budget.limit_musd), "limit_tokens": budget.limit_tokens,
                           "assignee": case.assignee.get_username() if case.assignee else ""})
        if case.assignee is not None:
            notification_send(actor="system", kind="budget_warning", user=case.assignee, case=case,
                              subject=f"{case.reference} has spent {round(100 * (budget.share() or 0))}% of its budget",
                              body=f"The agents have spent {spent} on {case.reference} (budget: {limit}). At the "
                                   "budget its next model call is refused and its run waits for a lead.",
                              url=reverse("cases:detail", args=[case.reference]))
    return True


def budget_reached_record(*, budget: CaseBudget, estimate_musd: int, estimate_tokens: int, message: str) -> None:
    """A call was refused: count it, and mark the case as at its budget (the first refusal
    since the last raise is audited and shown on its timeline)."""
    with transaction.atomic():
        durable()
        CaseBudget.objects.filter(pk=budget.pk).update(refused=F("refused") + 1)
        if CaseBudget.objects.filter(pk=budget.pk, reached_at__isnull=True).update(reached_at=timezone.now()):
            audit_record(actor="system", action="budget.reached", case=budget.case, obj=budget,
                         data={"limit_usd": usd_text(budget.limit_musd), "limit_tokens": budget.limit_tokens,
                               "spent_usd": usd_text(budget.spent_musd), "spent_tokens": budget.spent_tokens,
                               "reserved_usd": usd_text(budget.reserved_musd),
                               "call_estimate_usd": usd_text(estimate_musd), "call_estimate_tokens": estimate_tokens,
                               "message": message})
