"""Restricted cases (issue 41): a lead of the team owning a case's type restricts it to named
people; only they and admins see it, and it says "Restricted" wherever it appears."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from rest_framework.test import APIClient

from audit.models import AuditEntry
from casework.cases import services
from casework.cases.report.services import case_report_html
from casework.cases.restriction import case_restrict, case_unrestrict
from casework.people.roles import ADMIN, INVESTIGATOR, MANAGER
from casework.people.services import user_create
from casework.people.teams import team_create, team_member_set

pytestmark = pytest.mark.django_db


def _person(username: str, role: str = INVESTIGATOR):
    return user_create(actor="system", username=username, password=f"{username}-pass-123", role=role)


@pytest.fixture
def people():
    """IAM (owns access changes): lena leads, mark and nina are members; fred is in Fraud; root
    is an admin in no team; manny is a manager (works no cases)."""
    iam = team_create(actor="system", name="IAM", case_types=["access_change"])
    fraud = team_create(actor="system", name="Fraud", case_types=["fraud_alert"])
    p = {name: _person(name) for name in ("lena", "mark", "nina", "fred")}
    team_member_set(actor="system", team=iam, user=p["lena"], role="lead")
    team_member_set(actor="system", team=iam, user=p["mark"])
    team_member_set(actor="system", team=iam, user=p["nina"])
    team_member_set(actor="system", team=fraud, user=p["fred"], role="lead")
    p["root"] = _person("root", ADMIN)
    p["manny"] = _person("manny", MANAGER)
    return p


@pytest.fixture
def case(people):
    return services.case_create(actor=people["lena"], case_type="access_change", title="Grant by a colleague")


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _fresh(user):
    """The person as a new request reads them (nothing cached on the object)."""
    return type(user).objects.get(pk=user.pk)


# --- the service ------------------------------------------------------------------------------

def test_a_lead_restricts_to_named_people_and_is_always_among_them(people, case):
    case_restrict(actor=people["lena"], case=case, people=[people["mark"], people["fred"]], reason="Colleague")
    case.refresh_from_db()
    assert case.restricted
    assert set(case.restrictions.values_list("user__username", flat=True)) == {"lena", "mark", "fred"}
    entry = AuditEntry.objects.get(case_id=case.pk, action="case.restricted")
    assert entry.actor == "lena"
    assert entry.data["people"] == ["fred", "lena", "mark"] and entry.data["reason"] == "Colleague"


def test_only_a_lead_of_an_owning_team_or_an_admin_may_restrict(people, case):
    for who in ("mark", "fred"):  # a member (not a lead); a lead of another team
        with pytest.raises(PermissionDenied):
            case_restrict(actor=people[who], case=case, people=[], reason="x")
    case_restrict(actor=people["root"], case=case, people=[people["nina"]], reason="By an admin")
    case.refresh_from_db()
    assert case.restricted
    with pytest.raises(PermissionDenied):
        case_unrestrict(actor=people["mark"], case=case, reason="x")


def test_named_people_must_work_cases_and_a_reason_is_required(people, case):
    with pytest.raises(ValidationError) as refused:
        case_restrict(actor=people["lena"], case=case, people=[people["manny"]], reason="x")
    assert "people" in refused.value.message_dict and "manny" in str(refused.value)
    people["mark"].is_active = False
    people["mark"].save()
    with pytest.raises(ValidationError) as inactive:
        case_restrict(actor=people["lena"], case=case, people=[people["mark"]], reason="x")
    assert "mark" in str(inactive.value)
    with pytest.raises(ValidationError) as no_reason:
        case_restrict(actor=people["lena"], case=case, people=[], reason="  ")
    assert "reason" in no_reason.value.message_dict
    case.refresh_from_db()
    assert not case.restricted and not AuditEntry.objects.filter(action="case.restricted").exists()


def test_leaving_the_assignee_off_the_list_unassigns_them(people, case):
    services.case_assign(actor=people["lena"], case=case, assignee=people["mark"])
    case_restrict(actor=people["lena"], case=case, people=[people["mark"]], reason="First")
    case.refresh_from_db()
    assert case.assignee == people["mark"]  # still named
    case_restrict(actor=people["lena"], case=case, people=[people["nina"]], reason="Mark is too close")
    case.refresh_from_db()
    assert case.assignee is None
    change = AuditEntry.objects.filter(case_id=case.pk, action="case.assigned").order_by("-id").first()
    assert change.data["from"] == "mark" and change.data["to"] is None
    restricted = AuditEntry.objects.filter(case_id=case.pk, action="case.restricted").order_by("-id").first()
    assert restricted.data["removed"] == ["mark"] and restricted.data["added"] == ["nina"]


def test_lifting_it_gives_the_case_back_to_its_team(people, case):
    case_restrict(actor=people["lena"], case=case, people=[people["fred"]], reason="x")
    services.case_assign(actor=people["lena"], case=case, assignee=people["fred"])
    case_unrestrict(actor=people["lena"], case=case, reason="Done")
    case.refresh_from_db()
    assert not case.restricted and not case.restrictions.exists()
    assert case.assignee is None  # fred (Fraud) no longer sees an IAM case
    entry = AuditEntry.objects.get(case_id=case.pk, action="case.unrestricted")
    assert entry.data == {"people": ["fred", "lena"], "reason": "Done"}


# --- who sees it ------------------------------------------------------------------------------

def test_a_team_member_not_named_no_longer_sees_it_a_named_outsider_and_an_admin_do(people, case):
    case_restrict(actor=people["lena"], case=case, people=[people["fred"]], reason="x")
    url = f"/api/cases/{case.reference}/"
    assert _api(_fresh(people["mark"])).get(url).status_code == 404
    assert case.reference not in str(_api(_fresh(people["mark"])).get("/api/cases/").json())
    assert _api(_fresh(people["fred"])).get(url).status_code == 200
    assert _api(_fresh(people["root"])).get(url).status_code == 200


# --- the API ----------------------------------------------------------------------------------

def test_the_api_restricts_and_lifts(people, case):
    url = f"/api/cases/{case.reference}/restriction/"
    response = _api(people["lena"]).post(url, {"people": ["fred"], "reason": "Colleague"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {"reference": case.reference, "restricted": True, "people": ["fred", "lena"]}
    detail = _api(_fresh(people["fred"])).get(f"/api/cases/{case.reference}/").json()
    assert detail["restricted"] is True
    lifted = _api(_fresh(people["lena"])).delete(f"{url}?reason=Done")
    assert lifted.status_code == 200 and lifted.json()["restricted"] is False


def test_the_api_answers_403_to_a_member_404_to_an_outsider_and_400_naming_the_field(people, case):
    url = f"/api/cases/{case.reference}/restriction/"
    body = {"people": ["nina"], "reason": "x"}
    assert _api(people["mark"]).post(url, body, format="json").status_code == 403
    assert _api(people["fred"]).post(url, body, format="json").status_code == 404
    unknown = _api(people["lena"]).post(url, {"people": ["nobody"], "reason": "x"}, format="json")
    assert unknown.status_code == 400 and "nobody" in unknown.json()["people"][0]
    manager = _api(people["lena"]).post(url, {"people": ["manny"], "reason": "x"}, format="json")
    assert manager.status_code == 400 and "manny" in manager.json()["people"][0]
    no_reason = _api(people["lena"]).delete(url, {}, format="json")
    assert no_reason.status_code == 400 and "reason" in no_reason.json()
    case.refresh_from_db()
    assert not case.restricted


# --- the page ---------------------------------------------------------------------------------

def test_a_lead_restricts_from_the_case_page_and_the_header_says_restricted(client, people, case):
    client.force_login(people["lena"])
    page = client.get(f"/cases/{case.reference}/").content.decode()
    assert 'id="case-restriction"' in page and "data-restricted" not in page
    response = client.post(f"/cases/{case.reference}/restriction/",
                           {"action": "restrict", "people": ["nina"], "reason": "Colleague"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<strong>lena</strong>, <strong>nina</strong>" in html
    assert 'hx-swap-oob="true"' in html and ">Restricted</span>" in html
    case.refresh_from_db()
    assert case.restricted
    page = client.get(f"/cases/{case.reference}/").content.decode()
    assert 'aria-label="Restricted case: only the people named and admins see it"' in page


def test_the_page_form_names_a_bad_choice_and_hides_the_panel_from_non_leads(client, people, case):
    client.force_login(people["lena"])
    response = client.post(f"/cases/{case.reference}/restriction/",
                           {"action": "restrict", "people": ["manny"], "reason": "x"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and 'id="restriction-errors"' in response.content.decode()
    assert "people" in response.content.decode()
    client.force_login(people["mark"])
    assert 'id="case-restriction"' not in client.get(f"/cases/{case.reference}/").content.decode()
    refused = client.post(f"/cases/{case.reference}/restriction/", {"action": "restrict", "reason": "x"})
    assert refused.status_code == 403
    case.refresh_from_db()
    assert not case.restricted


def test_the_queue_row_and_the_report_say_restricted(client, people, case):
    case_restrict(actor=people["lena"], case=case, people=[people["mark"]], reason="x")
    client.force_login(people["mark"])
    queue = client.get("/cases/").content.decode()
    row = queue[queue.index(f'id="case-row-{case.pk}"'):]
    row = row[:row.index("</tr>")]
    assert ">Restricted</span>" in row and "aria-label=" in row
    case.refresh_from_db()
    report = case_report_html(case=case, actor=people["mark"])
    assert ">Restricted</span>" in report and "lena, mark" in report


def test_a_notification_about_a_restricted_case_says_so_in_the_inbox_and_the_email(client, people, case,
                                                                                    mailoutbox):
    from casework.cases.notifications.email import notification_email
    from casework.cases.notifications.services import notify_case_assigned

    people["mark"].email = "mark@example.com"
    people["mark"].save()
    case_restrict(actor=people["lena"], case=case, people=[people["mark"]], reason="x")
    case.refresh_from_db()
    note = notify_case_assigned(case=case, assignee=people["mark"], actor=people["lena"])
    client.force_login(people["mark"])
    inbox = client.get("/notifications/").content.decode()
    item = inbox[inbox.index(f'id="notification-{note.pk}"'):]
    assert ">Restricted</span>" in item[:item.index("</article>")]
    assert notification_email(note.pk)
    assert mailoutbox[-1].subject == f"[Restricted] {case.reference} assigned to you"
