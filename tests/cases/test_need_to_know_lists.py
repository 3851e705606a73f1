"""Need-to-know's side doors in lists: the queue's search and counts, its type and assignee
choices, "My cases", saved views, notifications and their e-mails, the CSV export and the PDF
report. A support agent never learns that a fraud case exists: no row, no count, no choice."""

from __future__ import annotations

import csv
import io

import pytest

from audit.models import AccessEntry, AuditEntry
from casework.cases.models import Case
from casework.cases.notifications.models import Notification
from casework.cases.notifications.services import notification_send
from casework.cases.saved_views.services import saved_view_create
from casework.cases.services import case_assign, case_create
from casework.people.teams import team_member_remove
from tests.cases.need_to_know import FRAUD, SUPPORT, person, team_of

pytestmark = pytest.mark.django_db

SECRET = "Zanzibar skimming ring"  # only the fraud case's title holds it


@pytest.fixture
def world(db):
    fay = person("fay", FRAUD)
    sue = person("sue", SUPPORT)
    sam = person("sam", SUPPORT)
    fraud = case_create(actor="system", case_type=FRAUD, title=SECRET)
    support = case_create(actor="system", case_type=SUPPORT, title="Cannot log in")
    return {"fay": fay, "sue": sue, "sam": sam, "fraud": fraud, "support": support}


def queue(client, user, **params):
    client.force_login(user)
    response = client.get("/cases/", params)
    return response, response.content.decode()


def test_a_support_agent_searching_a_fraud_reference_or_title_finds_nothing_and_no_count(client, world):
    fraud = world["fraud"]
    for q in (fraud.reference, "FRA-0", "Zanzibar", SECRET):
        response, html = queue(client, world["sue"], q=q)
        assert response.status_code == 200
        assert response.context["page"].paginator.count == 0 and not response.context["page"].object_list, q
        # The page echoes the search (its box, the save and export links): not what it found.
        assert ("Zanzibar" not in html) if q.startswith("FRA") else (fraud.reference not in html)
        assert "0 cases" in html
    # The API's count says the same.
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(world["sue"])
    body = api.get("/api/cases/", {"q": "Zanzibar"}).json()
    assert body["count"] == 0 and body["results"] == []
    # Its team finds it.
    response, html = queue(client, world["fay"], q="Zanzibar")
    assert response.context["page"].paginator.count == 1 and fraud.reference in html


def test_the_type_filter_offers_and_accepts_only_the_types_one_sees(client, world):
    response, html = queue(client, world["sue"])
    assert '<option value="support_ticket"' in html and '<option value="fraud_alert"' not in html
    response, html = queue(client, world["sue"], case_type=FRAUD)
    assert response.status_code == 400 and "case_type:" in html and world["fraud"].reference not in html
    _, html = queue(client, world["fay"])
    assert '<option value="fraud_alert"' in html and '<option value="support_ticket"' not in html


def test_the_assignee_choices_are_the_people_of_ones_teams(client, world):
    _, html = queue(client, world["sue"])
    assert '<option value="sam">sam</option>' in html and '<option value="fay">fay</option>' not in html


def test_my_cases_drops_a_case_of_a_team_one_left(client, world):
    support = world["support"]
    case_assign(actor="system", case=support, assignee=world["sam"])
    response, html = queue(client, world["sam"], assignee="me")
    assert response.context["page"].paginator.count == 1 and support.reference in html
    team_member_remove(actor="system", team=team_of(SUPPORT), user=world["sam"])
    response, html = queue(client, world["sam"], assignee="me")
    assert response.context["page"].paginator.count == 0 and support.reference not in html


def test_a_saved_view_lists_the_viewers_cases_and_is_shared_with_a_team(client, world):
    # fay shares her search with everyone: sue opens it and finds her own cases only.
    view = saved_view_create(actor=world["fay"], name="Zanzibar", query="q=Zanzibar", everyone=True)
    client.force_login(world["sue"])
    opened = client.get(f"/saved-views/{view.pk}/")
    response = client.get(opened["Location"])
    assert response.context["page"].paginator.count == 0 and world["fraud"].reference not in response.content.decode()
    # Shared with a team (people.Team): its members see it pinned; another team's do not.
    team_view = saved_view_create(actor=world["sue"], name="Support backlog", query="status=new",
                                  team=team_of(SUPPORT), pinned=True)
    assert "Support backlog" in queue(client, world["sam"])[1]
    assert "Support backlog" not in queue(client, world["fay"])[1]
    assert client.get(f"/saved-views/{team_view.pk}/").status_code == 404


def test_a_notification_about_a_case_reaches_only_people_who_may_see_it(client, world):
    fraud = world["fraud"]
    for user in (world["sue"], world["fay"]):
        notification_send(actor="system", kind="run_failed", case=fraud, user=user, subject=f"{fraud.reference} failed",
                          body="The run failed.")
    assert list(Notification.objects.values_list("recipient_user__username", flat=True)) == ["fay"]
    client.force_login(world["fay"])
    inbox = client.get("/notifications/").content.decode()
    assert f"{fraud.reference} failed" in inbox and 'id="nav-unread">1<' in inbox
    # fay leaves the fraud team: what told her about its case is gone from her inbox and badge.
    team_member_remove(actor="system", team=team_of(FRAUD), user=world["fay"])
    inbox = client.get("/notifications/").content.decode()
    assert f"{fraud.reference} failed" not in inbox and 'id="nav-unread"' not in inbox


def test_an_email_about_a_case_is_not_sent_to_someone_who_left_its_team(world, mailoutbox,
                                                                         django_capture_on_commit_callbacks):
    fraud = world["fraud"]
    with django_capture_on_commit_callbacks(execute=False) as pending:
        note = notification_send(actor="system", kind="run_failed", case=fraud, user=world["fay"],
                                 subject=f"{fraud.reference} failed", body="The run failed.")
    team_member_remove(actor="system", team=team_of(FRAUD), user=world["fay"])
    for callback in pending:
        callback()
    note.refresh_from_db()
    assert mailoutbox == [] and note.emailed_at is None and "may no longer see" in note.email_error
    assert AuditEntry.objects.filter(action="notification.email_withheld", object_id=str(note.pk)).exists()


def rows(response) -> list[dict]:
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_the_csv_export_holds_the_visible_cases_each_read_on_record(client, world):
    more = case_create(actor="system", case_type=SUPPORT, title="=HYPERLINK(\"http://x\")")
    client.force_login(world["sue"])
    assert 'id="queue-export"' in client.get("/cases/").content.decode()
    response = client.get("/cases/export.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    got = rows(response)
    assert sorted(r["reference"] for r in got) == sorted([world["support"].reference, more.reference])
    assert response["X-Export-Rows"] == "2" and response["X-Export-Capped"] == "false"
    assert next(r for r in got if r["reference"] == more.reference)["title"].startswith("'=")  # no formula
    reads = AccessEntry.objects.filter(via="cases:export_csv", user_id=world["sue"].pk)
    assert sorted(reads.values_list("case_ref", flat=True)) == sorted(r["reference"] for r in got)
    entry = AuditEntry.objects.get(action="cases.exported")
    assert entry.actor == "sue" and entry.data["rows"] == 2
    # The queue's filters apply; another team's type is refused, naming the filter.
    assert [r["reference"] for r in rows(client.get("/cases/export.csv", {"q": "log in"}))] == [
        world["support"].reference]
    refused = client.get("/cases/export.csv", {"case_type": FRAUD})
    assert refused.status_code == 400 and b"case_type" in refused.content


def test_the_csv_export_says_when_it_is_capped(client, world, monkeypatch):
    from casework.cases import export

    case_create(actor="system", case_type=SUPPORT, title="Another")
    monkeypatch.setattr(export, "EXPORT_CAP", 1)
    client.force_login(world["sue"])
    response = client.get("/cases/export.csv")
    assert len(rows(response)) == 1 and response["X-Export-Capped"] == "true" and response["X-Export-Cap"] == "1"


def test_another_teams_case_report_is_a_404_and_a_report_read_is_on_record(client, world):
    fraud = world["fraud"]
    client.force_login(world["sue"])
    assert client.get(f"/cases/{fraud.reference}/report.pdf").status_code == 404
    assert not AccessEntry.objects.filter(case_ref=fraud.reference).exists()
    client.force_login(world["fay"])
    response = client.get(f"/cases/{fraud.reference}/report.pdf")
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    assert AccessEntry.objects.filter(case_ref=fraud.reference, user_id=world["fay"].pk).exists()
    assert Case.objects.count() == 2
