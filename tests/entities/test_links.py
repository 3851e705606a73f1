"""Links and merges: through the services, the pages and the API; audited; merges only by
who may decide, only within a type, never undone; the merged case sends people on."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile

from agents.models import AgentRun
from audit.models import AuditEntry
from casework.cases.attachments.services import attachment_upload
from casework.cases.models import Case, Comment
from casework.cases.services import case_comment, case_create
from casework.cases.tasks.services import task_create
from casework.cases.timeline import timeline_rows
from casework.entities.models import CaseLink, Mention
from casework.entities.selectors import related_case_ids
from casework.entities.services import case_link, case_merge
from casework.errors import Conflict

pytestmark = pytest.mark.django_db


def test_a_link_is_recorded_with_its_reason_and_audited_on_both_cases(alice, alert, ticket):
    fraud, support = alert().case, ticket().case
    link = case_link(actor=alice, from_case=support, to_case=fraud, kind="related", reason="Same account.")
    assert (link.kind, link.created_by) == ("related", alice)
    assert set(AuditEntry.objects.filter(action="case.linked").values_list("case_ref", flat=True)) == {
        fraud.reference, support.reference}
    assert related_case_ids(fraud) == [support.pk] and related_case_ids(support) == [fraud.pk]
    with pytest.raises(Conflict):
        case_link(actor=alice, from_case=support, to_case=fraud, kind="related", reason="Again.")


@pytest.mark.parametrize("kind,reason,field", [("sibling", "x", "kind"), ("related", "  ", "reason")])
def test_a_bad_link_names_the_field_and_writes_nothing(alice, alert, ticket, kind, reason, field):
    fraud, support = alert().case, ticket().case
    with pytest.raises(ValidationError) as exc:
        case_link(actor=alice, from_case=support, to_case=fraud, kind=kind, reason=reason)
    assert field in exc.value.message_dict
    assert not CaseLink.objects.exists() and not AuditEntry.objects.filter(action="case.linked").exists()


def test_a_merge_moves_everything_that_points_at_the_duplicate_and_closes_it(alice, ticket):
    keep, dup = ticket().case, ticket(customer_id="CUST-9002", email="eve@example.com").case
    case_comment(actor=alice, case=dup, body="Customer called twice.")
    task_create(actor=alice, case=dup, title="Call back")
    attachment_upload(actor=alice, case=dup, upload=SimpleUploadedFile("note.txt", b"hello", "text/plain"))
    run = AgentRun.objects.create(case=dup, pipeline="support", mode="triage")
    with pytest.raises(Conflict, match="agents running"):
        case_merge(actor=alice, merged=dup, survivor=keep, reason="Same login problem.")
    AgentRun.objects.filter(pk=run.pk).update(status=AgentRun.Status.COMPLETED)

    merge = case_merge(actor=alice, merged=dup, survivor=keep, reason="Same login problem.")

    assert Comment.objects.get().case == keep
    assert keep.tasks.count() == 1 and keep.attachments.count() == 1 and keep.agent_runs.count() == 1
    assert {"cases.Comment", "case_tasks.Task", "case_attachments.Attachment", "agents.AgentRun"} <= set(
        merge.moved["moved"])
    # What the duplicate named is named by the survivor now (the customer both share, once).
    assert not Mention.objects.filter(case=dup).exists()
    assert Mention.objects.filter(case=keep, entity__kind="customer").count() == 2
    dup.refresh_from_db()
    assert dup.status == "closed" and dup.decisions.get().outcome == "merged"
    assert dup.decisions.get().outcome_label == "Merged into another case (duplicate)"
    assert CaseLink.objects.filter(from_case=dup, to_case=keep, kind="duplicate").exists()
    # Its history reads on the survivor's timeline (the trail itself is never rewritten).
    refs = {getattr(r, "case_ref", None) for r in timeline_rows(keep)}
    assert dup.reference in refs
    assert AuditEntry.objects.filter(action="case.closed", case_ref=dup.reference, data__outcome="merged").exists()
    with pytest.raises(Conflict):
        case_merge(actor=alice, merged=dup, survivor=keep, reason="Again.")


def test_a_merge_needs_the_same_type_and_the_deciders_role(alice, rita, alert, ticket):
    support, fraud = ticket().case, alert().case
    with pytest.raises(ValidationError) as exc:
        case_merge(actor=alice, merged=support, survivor=fraud, reason="Same.")
    assert "survivor" in exc.value.message_dict
    one = case_create(actor=alice, case_type="release_risk", title="Release 1.0")
    two = case_create(actor=alice, case_type="release_risk", title="Release 1.0 again")
    with pytest.raises(PermissionDenied):
        case_merge(actor=alice, merged=two, survivor=one, reason="Same release.")
    case_merge(actor=rita, merged=two, survivor=one, reason="Same release.")
    assert Case.objects.get(pk=two.pk).status == "closed"


def test_the_merged_case_page_redirects_with_a_notice(alice, alice_client, ticket):
    keep, dup = ticket().case, ticket(customer_id="CUST-9002", email="eve@example.com").case
    response = alice_client.post(f"/cases/{dup.reference}/merge/", {"into": keep.reference.lower(),
                                                                    "reason": "Same issue."})
    assert response.status_code == 302 and response.url == f"/cases/{keep.reference}/"

    response = alice_client.get(f"/cases/{dup.reference}/", follow=True)

    assert response.redirect_chain[0][0] == f"/cases/{keep.reference}/?from={dup.reference}"
    page = response.content.decode()
    assert f"{dup.reference} was merged into {keep.reference} by alice" in page and "Same issue." in page


def test_the_pages_refuse_bad_input_naming_the_field(alice_client, alert, ticket):
    fraud, support = alert().case, ticket().case
    response = alice_client.post(f"/cases/{support.reference}/links/", {"kind": "related", "to": "FRA-999999",
                                                                        "reason": "x"})
    assert response.status_code == 400 and "to: No case FRA-999999." in response.content.decode()
    response = alice_client.post(f"/cases/{support.reference}/merge/", {"into": fraud.reference, "reason": ""})
    assert response.status_code == 400 and "reason" in response.content.decode()
    response = alice_client.post(f"/cases/{support.reference}/links/", {"kind": "related", "to": fraud.reference,
                                                                        "reason": "Same account."})
    assert response.status_code == 302
    assert fraud.reference in alice_client.get(f"/cases/{support.reference}/").content.decode()


def test_the_api_links_merges_and_answers_related_cases(api, alert, ticket):
    fraud, support = alert().case, ticket().case
    dup = ticket(customer_id="CUST-9002", email="eve@example.com").case

    assert api.post(f"/api/cases/{support.reference}/links/", {"to": fraud.reference, "kind": "parent",
                                                               "reason": "The alert's ticket."},
                    format="json").status_code == 201
    bad = api.post(f"/api/cases/{support.reference}/links/", {"to": fraud.reference, "kind": "cousin",
                                                              "reason": "x"}, format="json")
    assert bad.status_code == 400 and "kind" in bad.json()
    wrong_type = api.post(f"/api/cases/{dup.reference}/merge/", {"into": fraud.reference, "reason": "x"},
                          format="json")
    assert wrong_type.status_code == 400 and "survivor" in str(wrong_type.json())
    merged = api.post(f"/api/cases/{dup.reference}/merge/", {"into": support.reference, "reason": "Same."},
                      format="json")
    assert merged.status_code == 201 and merged.json()["survivor"] == support.reference
    again = api.post(f"/api/cases/{dup.reference}/merge/", {"into": support.reference, "reason": "Same."},
                     format="json")
    assert again.status_code == 409

    related = api.get(f"/api/cases/{support.reference}/related/").json()
    assert {c["reference"] for c in related["linked"]} == {fraud.reference, dup.reference}
    account = next(e for e in related["entities"] if e["kind"] == "account")
    assert [c["reference"] for c in account["other_cases"]] == [fraud.reference]
