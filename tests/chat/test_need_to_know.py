"""Need-to-know in "Ask the agent": the tools answer the person who asked.

Two teams (fraud: fraud alerts and transaction investigations; support: support tickets); a
fraud alert and a support ticket both naming the account and the IP. A support member asks
on the ticket; the model (the fake OpenAI server) calls find_related_cases on the ticket and
on the fraud case, and the timeline of the fraud case: the first lists no fraud case, the
others answer as if the fraud case did not exist. The answer is written by the worker's code
(agents.chat.answering), which carries the asker to the tools' threads.
"""

from __future__ import annotations

import pytest
from django.db import transaction
from django.test import Client

from agents.chat.models import ChatMessage
from agents.runtime.prompting import unfence_data
from casework.people.roles import INVESTIGATOR
from casework.people.services import user_create
from casework.people.teams import team_create, team_member_set
from tests.entities.conftest import alert, ticket  # noqa: F401 - fixtures
from tests.fakes.llm_servers import json_answer, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)


def _member(username: str, name: str, case_types: list[str]) -> Client:
    user = user_create(actor="system", username=username, password=f"{username}-pass-123", role=INVESTIGATOR)
    team_member_set(actor="system", team=team_create(actor="system", name=name, case_types=case_types), user=user)
    client = Client()
    client.force_login(user)
    return client


def test_a_support_member_s_tools_answer_as_if_the_fraud_case_did_not_exist(alert, ticket, fake_openai):  # noqa: F811
    with transaction.atomic():
        fraud = alert().case
    with transaction.atomic():
        support = ticket().case
    sam = _member("sam", "Support", ["support_ticket"])
    fake_openai.reset()
    fake_openai.script(tool_calls(("find_related_cases", {"reference": support.reference}),
                                  ("find_related_cases", {"reference": fraud.reference}),
                                  ("get_case_timeline", {"reference": fraud.reference})),
                       json_answer({"answer": "Nothing else I may show you."}))

    sam.post(f"/cases/{support.reference}/ask/send/", {"content": "Is this tied to anything?"},
             HTTP_HX_REQUEST="true")

    answer = ChatMessage.objects.filter(conversation__case=support, role="assistant").latest("id")
    assert answer.status == "done", answer.error
    results = [unfence_data(m["content"]) for m in fake_openai.requests[-1].messages if m["role"] == "tool"]
    related, other, timeline = results
    assert related["reference"] == support.reference and fraud.reference not in str(related)
    assert {e["kind"] for e in related["entities"]} >= {"account", "ip"}
    assert all(e["other_case_count"] == 0 and e["other_cases"] == [] for e in related["entities"])
    assert other == {"error": "ToolExecution", "message": f"find_related_cases failed: LookupError: "
                                                          f"No case {fraud.reference!r}."}
    assert timeline["error"] == "ToolExecution" and "No case" in timeline["message"]
    assert [t["success"] for t in answer.tool_calls] == [True, False, False]
