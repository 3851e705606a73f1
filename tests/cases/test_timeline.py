"""The case page's timeline: one row per agent run, people's actions as rows, and the filter."""

from __future__ import annotations

import pytest

from audit.context import correlation
from audit.models import AuditEntry
from audit.services import audit_record
from casework.cases.services import case_comment, case_create
from casework.cases.timeline import RunRow, duration_words, timeline_rows
from tests.fraud.conftest import CYCLING

pytestmark = pytest.mark.django_db


class _Obj:
    """Stands in for a row the entry names (audit only reads its label and pk)."""

    def __init__(self, pk, label="agents.agentcall"):
        self.pk = pk
        self._meta = type("Meta", (), {"label_lower": label})


def _failed_run(case, alice, *, run=901):
    """A run's entries as the runtime writes them: queued (by a person), a tool call that
    failed, a call that failed, a call that worked, an agent's status change, the end."""
    audit_record(actor=alice, action="agent.run_queued", case=case, obj=_Obj(run, "agents.agentrun"),
                 data={"pipeline": "fraud", "mode": "rerun_all"})
    with correlation("run-corr-901"):
        audit_record(actor="agent:geo", action="agent.tool_called", case=case, obj=_Obj(71),
                     data={"tool": "ip_lookup", "arguments": {}, "success": False, "error_type": "timeout"})
        audit_record(actor="agent:geo", action="agent.call_failed", case=case, obj=_Obj(71),
                     data={"run": run, "key": "geo", "error": "Timed out after 30 s"})
        audit_record(actor="agent:identity", action="agent.call_completed", case=case, obj=_Obj(72),
                     data={"run": run, "key": "identity", "error": ""})
        audit_record(actor="agent:orchestrator", action="case.status_changed", case=case, obj=case,
                     data={"from": "new", "to": "awaiting_decision"})
        audit_record(actor="system", action="agent.run_completed_with_errors", case=case,
                     obj=_Obj(run, "agents.agentrun"),
                     data={"pipeline": "fraud", "mode": "rerun_all", "error": "1 of 2 agents failed."})


def test_a_real_run_folds_into_one_row_and_people_stay_rows(alice, django_capture_on_commit_callbacks):
    from casework.fraud.services import alert_create

    with django_capture_on_commit_callbacks(execute=True):  # the offline pipeline runs (eager)
        alert = alert_create(actor=alice, data=CYCLING)
    case = alert.case
    case_comment(actor=alice, case=case, body="Called the bank.")
    entries = AuditEntry.objects.filter(case_id=case.pk).count()
    rows = timeline_rows(case)
    runs = [r for r in rows if isinstance(r, RunRow)]
    assert len(runs) == 1 and entries >= 10
    run = runs[0]
    assert run.pipeline == "fraud" and run.status == "completed" and run.status_words == "completed"
    # five specialists and the orchestrator, every call's entry inside the row
    assert len(run.calls) == 6 and not run.failures and run.requested_by == "alice"
    assert sum(len(r.entries) if isinstance(r, RunRow) else 1 for r in rows) == entries
    people = [r.action for r in rows if not isinstance(r, RunRow) and r.actor == "alice"]
    assert people[0] == "case.commented"  # newest first


def test_a_failed_run_names_its_failures_and_the_agents_status_change_folds_in(alice):
    case = case_create(actor=alice, case_type="fraud_alert", title="Cycling")
    _failed_run(case, alice)
    case_comment(actor=alice, case=case, body="Looking.")
    rows = timeline_rows(case)
    assert [type(r).__name__ for r in rows] == ["AuditEntry", "RunRow", "AuditEntry"]
    run = rows[1]
    assert run.status_words == "completed with errors" and not run.ok
    assert run.failures == ["tool ip_lookup (timeout)", "geo (Timed out after 30 s)"]
    assert len(run.calls) == 2 and len(run.tools) == 1
    assert "case.status_changed" in [e.action for e in run.entries]  # by the orchestrator, same correlation


def test_the_people_filter_keeps_only_people_and_agents_only_the_runs(alice):
    case = case_create(actor=alice, case_type="fraud_alert", title="Cycling")
    _failed_run(case, alice)
    case_comment(actor=alice, case=case, body="Looking.")
    audit_record(actor="employee:u101", action="access.claim_submitted", case=case, data={})
    people = timeline_rows(case, show="people")
    assert [e.action for e in people] == ["access.claim_submitted", "case.commented", "agent.run_queued",
                                         "case.created"]
    agents = timeline_rows(case, show="agents")
    assert [type(r).__name__ for r in agents] == ["RunRow"]


def test_a_running_run_says_so_and_a_failed_one_gives_its_error(alice):
    case = case_create(actor=alice, case_type="fraud_alert", title="Cycling")
    audit_record(actor="system", action="agent.run_queued", case=case, obj=_Obj(5, "agents.agentrun"),
                 data={"pipeline": "fraud", "mode": "alert_creation"})
    assert timeline_rows(case)[0].status_words == "queued"
    audit_record(actor="agent:geo", action="agent.call_completed", case=case, obj=_Obj(9), data={"run": 5})
    assert timeline_rows(case)[0].status_words == "running"
    audit_record(actor="system", action="agent.run_failed", case=case, obj=_Obj(5, "agents.agentrun"),
                 data={"pipeline": "fraud", "error": "The provider refused the key."})
    assert timeline_rows(case)[0].status_words == "failed: The provider refused the key."


def test_durations_read_as_words():
    from datetime import timedelta

    assert duration_words(timedelta(seconds=0.02)) == "under 0.1 s"
    assert duration_words(timedelta(seconds=0.42)) == "0.4 s"
    assert duration_words(timedelta(seconds=75)) == "1 min 15 s"
    assert duration_words(timedelta(hours=3, minutes=2)) == "3 h 2 min"


def test_the_page_and_its_poll_keep_the_filter(alice_client, alice):
    case = case_create(actor=alice, case_type="fraud_alert", title="Cycling")
    _failed_run(case, alice)
    page = alice_client.get(f"/cases/{case.reference}/", {"timeline": "people"}).content.decode()
    newest = AuditEntry.objects.filter(case_id=case.pk, actor="alice").latest("id").pk
    assert (f'hx-get="/cases/{case.reference}/timeline/?timeline=people&amp;after={newest}" '
            f'hx-trigger="every 10s"') in page
    assert 'aria-current="true">People</a>' in page and "<details" not in page
    poll = alice_client.get(f"/cases/{case.reference}/timeline/", {"timeline": "agents"}, HTTP_HX_REQUEST="true",
                            HTTP_HX_CURRENT_URL=f"http://testserver/cases/{case.reference}/?tab=tasks")
    body = poll.content.decode()
    assert '<details data-run="901">' in body and "failed: tool ip_lookup (timeout); geo (Timed out after 30 s)" in body
    assert 'agent: tool called <span class="muted">ip_lookup — failed (timeout)</span>' in body
    assert 'agent: call failed <span class="muted">0 ms — Timed out after 30 s</span>' in body
    # the page's address keeps the choice, and what else its query held
    assert poll["HX-Replace-Url"] == f"/cases/{case.reference}/?tab=tasks&timeline=agents"
    # a poll that keeps the filter does not touch the address; a mistyped filter is "all"
    same = alice_client.get(f"/cases/{case.reference}/timeline/", {"timeline": "agents"}, HTTP_HX_REQUEST="true",
                            HTTP_HX_CURRENT_URL=f"http://testserver/cases/{case.reference}/?timeline=agents")
    assert "HX-Replace-Url" not in same
    assert 'aria-current="true">All</a>' in alice_client.get(f"/cases/{case.reference}/?timeline=bogus").content.decode()


def test_the_timeline_costs_a_bounded_number_of_queries(alice_client, alice, django_assert_max_num_queries):
    case = case_create(actor=alice, case_type="fraud_alert", title="Cycling")
    for run in range(20):
        _failed_run(case, alice, run=1000 + run)
    url = f"/cases/{case.reference}/timeline/"
    alice_client.get(url, HTTP_HX_REQUEST="true")  # warm the session and roles
    # session, user, roles, the case, the entries (a page, then down to a cut run's start),
    # the header's assignee
    with django_assert_max_num_queries(7):
        response = alice_client.get(url, HTTP_HX_REQUEST="true")
    # 50 entries a page, 6 a run: the ninth run, cut by the page's edge, is shown whole
    body = response.content.decode()
    assert body.count("<details") == 9 and 'id="timeline-older"' in body
