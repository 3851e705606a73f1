"""The sixth type, driven end to end through the product's public surface (issue 45 item 4):
the queue, the case page and its tabs, the lifecycle page, a run of its pipeline on the offline
provider, "Ask the agent" with its tool, a person's decision and its outbox event, and the
evaluation runner. Nothing outside tests/sixth_type/ names the type."""

from __future__ import annotations

import pytest

from agents.chat.models import ChatMessage
from agents.evals.evaluate import run_evaluation
from agents.evals.isolation import empty_tables
from agents.evals.schema import suite_names
from agents.models import AgentRun
from casework.cases.models import Case
from casework.entities.models import Entity
from casework.outbox.models import Action, OutboxEvent
from tests.sixth_type.models import WarrantyClaim
from tests.sixth_type.services import warranty_claim_submit

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _offline(settings):
    settings.LLM_PROVIDER = "offline"


@pytest.fixture
def claim(alice) -> WarrantyClaim:
    made = warranty_claim_submit(actor=alice, serial_number="SN-0042", product="Tablet T3",
                                 defect="Screen flickers and goes dark", months_since_purchase=8)
    return WarrantyClaim.objects.select_related("case").get(pk=made.pk)


def test_a_claim_is_a_case_in_the_queue_and_its_page_shows_its_tabs(claim, alice_client):
    case = claim.case
    assert case.reference == "WAR-000001" and case.get_case_type_display() == "Warranty claim"
    queue = alice_client.get("/cases/").content.decode()
    assert case.reference in queue and 'value="warranty_claim"' in queue  # the type filter offers it
    filtered = alice_client.get("/cases/?case_type=warranty_claim").content.decode()
    assert case.reference in filtered
    page = alice_client.get(f"/cases/{case.reference}/")
    html = page.content.decode()
    assert page.status_code == 200
    # Its own tab first, then the tabs the shared apps add to every type's page.
    assert 'id="tab-btn-warranty-claim">Claim</button>' in html and "Tablet T3 (SN-0042)" in html
    assert html.index('id="tab-btn-warranty-claim"') < html.index('id="tab-btn-evidence"')
    # What its record names: the serial number, a kind of entity the type registered.
    assert Entity.objects.filter(kind="serial_number", value="SN-0042").exists()


def test_the_lifecycle_page_draws_its_table(alice_client):
    page = alice_client.get("/lifecycles/").content.decode()
    section = page[page.index('id="lifecycle-warranty_claim"'):]
    svg = section[:section.index("</svg>")]
    assert svg.count("<rect") == 4
    for state in ("received", "assessing", "assessed", "decided"):
        assert f'id="state-warranty_claim-{state}"' in section


def test_a_run_of_its_pipeline_completes_on_the_offline_provider(claim):
    run = AgentRun.objects.get(case=claim.case)
    assert (run.pipeline, run.status) == ("warranty", "completed")
    claim.refresh_from_db()
    assert (claim.status, claim.verdict) == ("assessed", "covered")
    assert "within 24 months" in claim.verdict_reason
    assert Case.objects.get(pk=claim.case_id).status == "awaiting_decision"


def test_ask_the_agent_answers_with_its_tool(claim, alice_client):
    alice_client.post(f"/cases/{claim.case.reference}/ask/send/", {"content": "What does the claim say?"},
                      HTTP_HX_REQUEST="true")
    [answer] = ChatMessage.objects.filter(conversation__case=claim.case, role="assistant")
    assert answer.content.startswith("The claim (from get_warranty_claim): Tablet T3 SN-0042, 8 months old")
    assert [t["name"] for t in answer.tool_calls] == ["get_warranty_claim"]
    alice_client.post(f"/cases/{claim.case.reference}/ask/send/", {"content": "hello"}, HTTP_HX_REQUEST="true")
    help_text = ChatMessage.objects.filter(conversation__case=claim.case, role="assistant").order_by("id").last()
    assert help_text.content.endswith("what happened on the case (its timeline), or what the claim says.")


def test_a_persons_decision_writes_its_outbox_event(claim, alice_client):
    response = alice_client.post(f"/cases/{claim.case.reference}/close/",
                                 {"outcome": "repair", "reason": "A screen fault within the warranty."})
    assert response.status_code == 302
    event = OutboxEvent.objects.get(type="warranty.decided")
    assert event.case_id == claim.case_id and event.case_type == "warranty_claim"
    assert event.payload["data"]["decision"]["outcome"] == "repair"
    assert event.payload["data"]["claim"] == {"serial_number": "SN-0042", "product": "Tablet T3"}
    assert Action.objects.get(event=event).label == "Warranty decision"
    claim.refresh_from_db()
    assert claim.status == "decided" and Case.objects.get(pk=claim.case_id).status == "closed"


def test_the_evaluation_runner_runs_its_scenario_and_it_passes():
    assert "warranty_claim" in suite_names()
    report = run_evaluation("warranty_claim", reset=empty_tables)
    [scenario] = report["scenarios"]
    assert scenario["id"] == "covered_screen_fault"
    assert scenario["status"] == "passed", scenario["failures"]
    assert report["summary"]["pass_rate"] == 1.0
