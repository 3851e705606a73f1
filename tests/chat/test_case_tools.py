"""Each case type's own read-only tools in "Ask the agent": fraud (the alert's facts, the
account's history and links, similar decided cases), access (the rights check, absences),
transactions (the card's transactions, the investigation's record). The model calls them
over the fake OpenAI server; the offline agent answers from their results."""

from __future__ import annotations

import pytest
from django.db import transaction

from agents.chat.context import tools_for
from agents.chat.models import ChatMessage
from agents.runtime.prompting import unfence_data
from tests.access.conftest import mark, org, submit  # noqa: F401 - fixtures
from tests.fakes.llm_servers import json_answer, tool_calls
from tests.fraud.conftest import CYCLING, alert_data
from tests.transactions.conftest import investigate, load

pytestmark = pytest.mark.django_db(transaction=True)


def ask(client, case, question: str) -> ChatMessage:
    client.post(f"/cases/{case.reference}/ask/send/", {"content": question}, HTTP_HX_REQUEST="true")
    return ChatMessage.objects.filter(conversation__case=case, role="assistant").latest("id")


def fraud_case(alice, decided_lookalike: bool = True):
    from casework.cases.services import case_close
    from casework.fraud.services import alert_create

    if decided_lookalike:
        with transaction.atomic():
            past = alert_create(actor=alice, data=alert_data(**{**CYCLING, "account_id": "ACC-0999"}))
        case_close(actor=alice, case=past.case, outcome="confirmed_fraud", reason="Mule ring.")
    with transaction.atomic():
        alert = alert_create(actor=alice, data=alert_data(**CYCLING))
    return alert


def tool_messages(request) -> dict[str, dict]:
    return {m.get("tool_call_id"): unfence_data(m["content"]) for m in request.messages if m["role"] == "tool"}


@pytest.mark.parametrize(("case_type", "own"), [
    ("fraud_alert", {"get_alert_facts", "get_account_history", "find_similar_cases"}),
    ("access_change", {"check_authorization", "lookup_data"}),
    ("transaction_investigation", {"get_card_transactions", "get_investigation_record"}),
])
def test_each_case_type_has_its_own_read_only_tools(case_type, own):
    names = {tool.name for tool in tools_for(case_type)}
    assert names == {"get_case_timeline", "find_related_cases", *own}
    assert not names & {"send_notification", "generate_report", "file_risk_report", "rule_draft_tool"}


def test_over_openai_the_agent_reads_the_alert_and_similar_cases(alice, alice_client, fake_openai):
    alert = fraud_case(alice)
    fake_openai.reset()
    reference = alert.case.reference
    fake_openai.script(tool_calls(("get_alert_facts", {"reference": reference}),
                                  ("find_similar_cases", {"reference": reference}),
                                  ("get_account_history", {"reference": reference})),
                       json_answer({"answer": "It cycles money like a confirmed mule."}))

    answer = ask(alice_client, alert.case, "Does this look like past cases?")

    assert answer.status == "done", answer.error
    assert [(t["name"], t["success"]) for t in answer.tool_calls] == [
        ("get_alert_facts", True), ("find_similar_cases", True), ("get_account_history", True)]
    facts, similar, history = tool_messages(fake_openai.requests[-1]).values()
    assert facts["features"]["deposit_withdraw_cycle_days_avg"] == 1.3 and facts["account_id"] == "ACC-1043"
    assert similar["confirmed_count"] == 1 and similar["confirmed"][0]["account_id"] == "ACC-0999"
    assert history["account_id"] == "ACC-1043" and history["other_alerts"] == []
    assert {t["function"]["name"] for t in fake_openai.requests[0].json["tools"]} >= {"find_similar_cases"}


def test_offline_the_fraud_agent_answers_from_its_tools(alice, alice_client):
    alert = fraud_case(alice)

    similar = ask(alice_client, alert.case, "Which similar cases were confirmed?")
    facts = ask(alice_client, alert.case, "What are the alert's facts?")
    account = ask(alice_client, alert.case, "What about this account's other alerts and links?")

    assert similar.content.startswith("find_similar_cases: 1 similar confirmed-fraud case, ") and "ACC-0999" in similar.content
    assert [t["name"] for t in similar.tool_calls] == ["find_similar_cases"]
    assert "deposit_withdraw_cycle_days_avg: 1.3" in facts.content
    assert account.content.startswith("Account ACC-1043 (from get_account_history): 0 other alerts.")


def test_the_access_agent_checks_rights_and_absences(alice_client, submit, fake_openai):  # noqa: F811
    mutation = submit()
    fake_openai.reset()
    fake_openai.script(tool_calls(("check_authorization", {"employee_id": "u001", "system": "FinanceApp",
                                                           "access_level": "Admin", "on_date": "2025-11-10"})),
                       json_answer({"answer": "Priya held Write, not Admin."}))

    answer = ask(alice_client, mutation.case, "Was she allowed to do this?")

    assert answer.status == "done" and answer.tool_calls[0]["name"] == "check_authorization"
    (result,) = tool_messages(fake_openai.requests[-1]).values()
    assert result["authorized"] is False and result["held_level"] == "Write"


def test_offline_the_access_agent_answers_rights_and_absences(alice_client, submit):  # noqa: F811
    mutation = submit()

    rights = ask(alice_client, mutation.case, "Was the employee authorised for this change?")
    absences = ask(alice_client, mutation.case, "Was anyone on sick leave or vacation?")

    assert rights.content == ("check_authorization: u001 was not authorised for Admin on FinanceApp on 2025-11-10 "
                              "(held: Write).")
    assert [t["name"] for t in absences.tool_calls] == ["lookup_data"] * 4
    assert absences.content.startswith("lookup_data lists no sick leave or vacation for u001 (made the change)")


def test_the_transaction_agent_reads_the_card_and_the_record(alice_client, fake_openai):
    investigation = investigate(load("card_testing"))
    reference = investigation.case.reference
    fake_openai.reset()
    fake_openai.script(tool_calls(("get_card_transactions", {"reference": reference, "limit": 5}),
                                  ("get_investigation_record", {"reference": reference})),
                       json_answer({"answer": "Card testing: many small payments."}))

    answer = ask(alice_client, investigation.case, "What happened on this card?")

    assert answer.status == "done", answer.error
    card, record = tool_messages(fake_openai.requests[-1]).values()
    assert card["card"] == "CARD-7001" and len(card["transactions"]) == 5 and card["count"] > 5
    assert record["reference"] == reference and "tool_executions" in record


def test_offline_the_transaction_agent_lists_the_card_and_the_record(alice_client):
    investigation = investigate(load("card_testing"))

    card = ask(alice_client, investigation.case, "Show me the card's transactions")
    record = ask(alice_client, investigation.case, "What insights and recommendations are there?")

    assert card.content.startswith("Card CARD-7001 (") and "← investigated" in card.content
    assert record.content.startswith(f"{investigation.case.reference} (from get_investigation_record):")
    assert "step " in record.content
