"""The agents' part of the case page: live run panel, trace view, re-run buttons."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from agents.llm.offline_registry import offline_analyst
from agents.models import AgentCall, AgentRun
from agents.runtime.agent import Agent
from agents.runtime.pipeline import CallSpec, Pipeline, Stage, register_pipeline
from agents.tasks import pipeline_enqueue
from audit.models import AuditEntry
from casework.cases.services import case_create

pytestmark = pytest.mark.django_db(transaction=True)

FAILING = {"on": True}


class Verdict(BaseModel):
    score: float
    note: str


@offline_analyst("pages_scout")
def _scout(data: dict) -> dict:
    return {"score": 0.4, "note": f"scouted {data['n']}"}


@offline_analyst("pages_flaky")
def _flaky(data: dict) -> dict:
    if FAILING["on"]:
        return {"score": "not a number"}  # fails its schema twice -> error result
    return {"score": 0.9, "note": "fine now"}


@offline_analyst("pages_judge")
def _judge(data: dict) -> dict:
    return {"score": 1.0, "note": f"judged {sorted(data)}"}


SCOUT = Agent(id="pages_scout", system_prompt="Scout.", output_model=Verdict)
FLAKY = Agent(id="pages_flaky", system_prompt="Flaky.", output_model=Verdict)
JUDGE = Agent(id="pages_judge", system_prompt="Judge.", output_model=Verdict)

register_pipeline(Pipeline(
    name="pages_test",
    modes={"full": [
        Stage("first", lambda ctx: [CallSpec("pages_scout", SCOUT, {"n": 1}), CallSpec("pages_flaky", FLAKY, {"n": 2})]),
        Stage("second", lambda ctx: [CallSpec("pages_judge", JUDGE,
                                              {k: v for k, v in ((k, ctx.output(k)) for k in ctx.results) if v})]),
    ]},
))


@pytest.fixture(autouse=True)
def _reset():
    FAILING["on"] = True
    yield
    FAILING["on"] = True


def start_run(alice):
    case = case_create(actor=alice, case_type="release_risk", title="Release v9")
    run = pipeline_enqueue(case=case, pipeline="pages_test", mode="full", actor=alice)
    run.refresh_from_db()
    return case, run


def test_a_failed_agent_leaves_its_error_and_the_run_completes_with_errors(alice):
    case, run = start_run(alice)
    # Issue 13: "completed" said the opposite of what happened to pages_flaky.
    assert run.status == AgentRun.Status.COMPLETED_WITH_ERRORS
    assert run.results["pages_flaky"]["error_type"] == "invalid_output"
    assert run.results["pages_scout"]["output"]["note"] == "scouted 1"
    assert "pages_flaky" not in run.results["pages_judge"]["output"]["note"]
    assert AuditEntry.objects.filter(case_id=case.pk, action="agent.call_failed", actor="agent:pages_flaky").exists()


def test_the_run_panel_names_the_failed_agent_and_offers_a_rerun(alice_client, alice):
    case, run = start_run(alice)
    page = alice_client.get(f"/cases/{case.reference}/runs/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "pages_flaky" in html and "failed" in html
    assert "does not fit its schema" in html
    assert f'/cases/{case.reference}/runs/{run.pk}/rerun/' in html
    assert "hx-trigger=\"every 2s\"" not in html  # not polling once the run is over


def test_rerunning_one_agent_repeats_it_and_what_depends_on_it_only(alice_client, alice):
    case, run = start_run(alice)
    FAILING["on"] = False
    response = alice_client.post(f"/cases/{case.reference}/runs/{run.pk}/rerun/", {"agent": "pages_flaky"})
    assert response.status_code == 302
    new = AgentRun.objects.exclude(pk=run.pk).get(case=case)
    assert new.status == AgentRun.Status.COMPLETED
    assert new.results["pages_flaky"]["output"]["note"] == "fine now"
    # The scout's result was carried over, not called again; the judge ran again.
    assert list(new.calls.values_list("name", flat=True).order_by("id")) == ["pages_flaky", "pages_judge"]
    assert "pages_flaky" in new.results["pages_judge"]["output"]["note"]


def test_rerunning_the_whole_run_calls_every_agent_again(alice_client, alice):
    case, run = start_run(alice)
    alice_client.post(f"/cases/{case.reference}/runs/{run.pk}/rerun/")
    new = AgentRun.objects.exclude(pk=run.pk).get(case=case)
    assert sorted(new.calls.values_list("name", flat=True)) == ["pages_flaky", "pages_judge", "pages_scout"]
    assert AuditEntry.objects.filter(case_id=case.pk, action="agent.run_queued", actor="alice").count() == 2


def test_the_trace_page_shows_calls_and_the_span_tree(alice_client, alice):
    case, run = start_run(alice)
    html = alice_client.get(f"/cases/{case.reference}/runs/{run.pk}/trace/").content.decode()
    assert "pipeline.pages_test" in html and "agent.pages_scout" in html and "llm.request" in html
    assert AgentCall.objects.filter(run=run).count() == 3
    assert "invalid_output" in html


def test_a_manager_cannot_see_runs(client, mona, alice):
    case, run = start_run(alice)
    client.force_login(mona)
    assert client.get(f"/cases/{case.reference}/runs/").status_code == 403
    assert client.post(f"/cases/{case.reference}/runs/{run.pk}/rerun/").status_code == 403


def test_a_run_of_another_case_is_not_found(alice_client, alice):
    case, run = start_run(alice)
    other = case_create(actor=alice, case_type="release_risk", title="Other")
    assert alice_client.get(f"/cases/{other.reference}/runs/{run.pk}/trace/").status_code == 404
