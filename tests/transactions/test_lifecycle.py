"""Investigation.status as a declared lifecycle (issue 22): each status says what really
happened, every move is checked and audited, and rules in code stand over the planner's
answers. Each test here failed before its fix."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.utils import timezone

from agents.models import AgentRun
from audit.models import AuditEntry
from casework.cases.dashboard import selectors as dashboard
from casework.cases.services import case_close, case_set_priority
from casework.errors import Conflict
from casework.transactions import progress
from casework.transactions.agents import tools
from casework.transactions.models import Investigation, PlannerDecision
from casework.transactions.services import investigation_resume
from tests.fakes.llm_servers import json_answer
from tests.transactions.conftest import investigate, load
from tests.transactions.test_planner_http import llm, planner_state  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db(transaction=True)


def fails(message: str):
    def handler(args):
        raise ConnectionError(message)
    return handler


def disk_full(**kwargs):
    raise RuntimeError("disk full")


def moves(investigation) -> list[tuple[str, str, str]]:
    return [(e.data["from"], e.data["to"], e.data["by"]) for e in AuditEntry.objects.filter(
        case_id=investigation.case_id, action="txn.investigation_status_changed").order_by("id")]


def txn_agreement():
    return next((row for row in dashboard.agreement(timezone.now())["rows"]
                 if row.type_label == "Transaction investigation"), None)


# --- The lifecycle --------------------------------------------------------------------------

def test_every_status_change_is_a_declared_move_audited_and_the_case_follows(run_investigation):
    investigation = run_investigation(load("card_testing"))

    assert investigation.status == "COMPLETED"
    assert moves(investigation) == [("PENDING", "IN_PROGRESS", "agent"), ("IN_PROGRESS", "COMPLETED", "agent")]
    # The queue says what happened: the agents are done and recommend; a person decides.
    assert investigation.case.status == "awaiting_decision"
    with pytest.raises(Conflict, match="cannot go from Completed to In progress"):
        investigation_resume(actor="system", investigation=investigation)


def test_an_agent_may_not_resume_a_failed_investigation_a_person_may(monkeypatch, alice):
    monkeypatch.setattr(progress, "investigation_complete", disk_full)
    investigation = investigate(load("card_testing"))
    assert investigation.status == "FAILED"
    with pytest.raises(Conflict, match="on the word of an agent"):
        investigation_resume(actor="agent:planner", investigation=investigation)

    monkeypatch.undo()
    with transaction.atomic():
        investigation_resume(actor=alice, investigation=investigation)
    investigation.refresh_from_db()
    assert investigation.status == "COMPLETED", investigation.error
    assert ("FAILED", "IN_PROGRESS", "person") in moves(investigation)


# --- The wrong states -----------------------------------------------------------------------

def test_a_context_that_cannot_be_loaded_is_inconclusive_and_claims_nothing(monkeypatch, alice, alice_client):
    monkeypatch.setitem(tools.HANDLERS, "context_tool", fails("transaction store unreachable"))
    investigation = investigate(load("ordinary"))

    assert investigation.status == "INCONCLUSIVE"
    assert investigation.state["completed_steps"] == ["context_tool"]
    assert "context could not be loaded" in investigation.error and "unreachable" in investigation.error
    assert investigation.summary == investigation.error and investigation.confidence_score == 0
    # Nothing was learned: the case's priority is not lowered, nothing is recommended, and
    # the case is not "awaiting decision" on a recommendation that does not exist.
    case = investigation.case
    assert case.priority == "medium"
    assert not AuditEntry.objects.filter(case_id=case.pk, action="case.priority_changed").exists()
    assert not investigation.recommendations.exists()
    assert case.status == "in_progress"
    page = alice_client.get(f"/cases/{case.reference}/").content.decode()
    assert ">Inconclusive</span>" in page and 'data-testid="txn-severity"' not in page
    assert "could not be loaded, so nothing was analysed" in page

    # A person decides "not fraud": the agents said nothing, so nothing agrees or disagrees.
    case_close(actor=alice, case=case, outcome="not_fraud", reason="Checked by hand.")
    row = txn_agreement()
    assert row.decided == 1 and row.with_recommendation == 0 and row.agreed == 0


def test_a_run_stopped_by_the_runtime_whose_write_back_fails_is_failed_not_in_progress(monkeypatch, settings):
    """The runtime's own step limit stops the run and only logs a failing finish; the
    investigation must still say the run failed."""
    settings.RUN_MAX_STEPS = 3
    monkeypatch.setattr(progress, "investigation_complete", disk_full)
    investigation = investigate(load("card_testing"))

    assert investigation.status == "FAILED"
    assert "Writing the results failed: RuntimeError: disk full" in investigation.error
    assert investigation.is_resumable


class Person:
    """Sets the case's priority, as a person does on the case page, after the planner's first step."""

    def __init__(self, user, monkeypatch, priority: str):
        self.user, self.priority, self.done = user, priority, False
        self.real = progress.investigation_record_progress
        monkeypatch.setattr(progress, "investigation_record_progress", self)

    def __call__(self, *, investigation_id, state):
        self.real(investigation_id=investigation_id, state=state)
        if not self.done:
            self.done = True
            case = Investigation.objects.get(pk=investigation_id).case
            case_set_priority(actor=self.user, case=case, priority=self.priority, reason="I know this card.")


@pytest.mark.parametrize("stop", ["timed_out", "max_steps"])
def test_a_run_stopped_early_keeps_the_priority_a_person_set(stop, monkeypatch, settings, alice, alice_client):
    from tests.transactions.test_failures_and_resume import FakeClock

    if stop == "timed_out":
        clock = FakeClock()
        monkeypatch.setattr("casework.transactions.agents.pipeline.clock", clock)
        settings.TXN_INVESTIGATION_TIMEOUT_SECONDS = 60
        real = tools.HANDLERS["pattern_tool"]

        def slow_patterns(args):  # two minutes on the investigation's clock: past its timeout
            clock.advance(120)
            return real(args)

        monkeypatch.setitem(tools.HANDLERS, "pattern_tool", slow_patterns)
    else:
        settings.TXN_MAX_STEPS = 3
    Person(alice, monkeypatch, "low")
    investigation = investigate(load("card_testing"))

    assert investigation.status == ("TIMED_OUT" if stop == "timed_out" else "STOPPED")  # issue 43: not Completed
    assert investigation.severity in ("HIGH", "CRITICAL")  # the agents would have raised it
    investigation.case.refresh_from_db()
    assert investigation.case.priority == "low"
    kept = AuditEntry.objects.get(case_id=investigation.case_id, action="txn.guard_override",
                                  data__rule="person_priority_stands")
    assert "alice set the priority to low" in kept.data["reason"]
    page = alice_client.get(f"/cases/{investigation.case.reference}/").content.decode()
    assert "alice set the priority to low" in page


def test_a_run_stopped_at_the_step_limit_never_lowers_the_priority(settings):
    """It has not seen all the evidence: an ordinary purchase cut short stays at medium."""
    settings.TXN_MAX_STEPS = 3
    investigation = investigate(load("ordinary"))

    assert investigation.status == "STOPPED" and investigation.severity == "LOW"  # issue 43: not Completed
    assert "step limit" in investigation.error and investigation.is_resumable
    investigation.case.refresh_from_db()
    assert investigation.case.priority == "medium"


def test_a_transaction_investigated_again_does_not_cite_its_own_earlier_investigation(run_investigation, alice):
    txn_id = load("card_testing")
    first = run_investigation(txn_id)
    assert first.status == "COMPLETED"
    case_close(actor=alice, case=first.case, outcome="fraud", reason="Cardholder confirmed.")

    again = run_investigation(txn_id)

    assert again.status == "COMPLETED", again.error
    assert "similarity_tool" in again.state["completed_steps"]
    cited = [m["reference"] for m in again.state["similarity_results"]["matches"]]
    assert first.case.reference not in cited
    assert not any(h["key"] == "known_pattern" for h in again.state["reasoning"]["hypotheses"])


# --- The guard: HIGH or CRITICAL needs recommendations before it completes ------------------

def choose(tool: str, reason: str = "Enough evidence.") -> object:
    return json_answer({"tool": tool, "reason": reason, "confidence": 0.9})


ANALYSIS = ["context_tool", "pattern_tool", "similarity_tool", "reasoning_tool"]


def test_the_planner_may_not_complete_a_critical_case_before_recommendations(llm, alice_client):  # noqa: F811
    llm.script(*[choose(t) for t in ANALYSIS], choose("COMPLETE", "The card testing is obvious; done."),
               choose("COMPLETE"))
    investigation = investigate(load("card_testing"))

    assert investigation.status == "COMPLETED", investigation.error
    assert investigation.severity in ("HIGH", "CRITICAL")
    fifth = PlannerDecision.objects.get(investigation=investigation, step=5)
    assert fifth.selected_tool == "recommendation_tool" and fifth.used_fallback
    assert "COMPLETE before recommendation_tool" in fifth.rejected
    assert investigation.recommendations.filter(action="block_card").exists()
    override = AuditEntry.objects.get(case_id=investigation.case_id, action="txn.guard_override")
    assert override.data["rule"] == "recommendations_required" and override.data["step"] == 5
    assert "needs recommendations before it completes" in override.data["reason"]
    assert "The card testing is obvious" in override.data["model"]
    page = alice_client.get(f"/cases/{investigation.case.reference}/").content.decode()
    assert "Overruled by the rules" in page and "needs recommendations before it completes" in page


def test_when_the_recommendation_step_fails_and_the_model_completes_code_recommends(llm, monkeypatch):  # noqa: F811
    monkeypatch.setitem(tools.HANDLERS, "recommendation_tool", fails("recommendation service down"))
    llm.script(*[choose(t) for t in [*ANALYSIS, "recommendation_tool"]], choose("COMPLETE"))
    investigation = investigate(load("card_testing"))

    assert investigation.status == "COMPLETED", investigation.error
    assert investigation.severity in ("HIGH", "CRITICAL")
    assert investigation.tool_executions.get(tool_name="recommendation_tool").status == "FAILED"
    assert investigation.recommendations.filter(action="block_card").exists()
    override = AuditEntry.objects.get(case_id=investigation.case_id, action="txn.guard_override")
    assert "recommendation_tool gave none" in override.data["reason"]
    assert override.data["code"].startswith("ran the recommendation step in code")


def test_a_high_case_stopped_at_the_step_limit_before_recommending_gets_them_from_code(llm, settings):  # noqa: F811
    settings.TXN_MAX_STEPS = 5
    llm.script(*[choose(t) for t in ANALYSIS], choose("COMPLETE"))
    investigation = investigate(load("card_testing"))

    assert investigation.status == "STOPPED"  # issue 43: the planner did not complete
    assert "recommendation_tool" not in investigation.state["completed_steps"]  # the limit came first
    assert investigation.recommendations.filter(action="block_card").exists()
    rules = list(AuditEntry.objects.filter(case_id=investigation.case_id, action="txn.guard_override")
                 .values_list("data__rule", flat=True))
    assert rules == ["recommendations_required", "recommendations_required"]  # the planner's, then the finish's
    assert AgentRun.objects.get(case=investigation.case).status == "completed"
