"""A case's tasks: services (each audited), the Tasks tab (htmx) and the API, on every case type."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from audit.models import AuditEntry
from casework.cases.services import case_close, case_create
from casework.cases.tasks import services
from casework.cases.tasks.checklists import DEFAULT_CHECKLISTS
from casework.cases.tasks.models import Task
from casework.cases.types import CASE_TYPES
from casework.errors import Conflict

pytestmark = pytest.mark.django_db


@pytest.fixture
def case(alice):
    return case_create(actor=alice, case_type="fraud_alert", title="Cycling")


def _actions(case):
    return list(AuditEntry.objects.filter(case_id=case.pk, action__startswith="task.").values_list("action", flat=True))


def test_create_assign_done_reopen_each_audited(case, alice, ivan):
    task = services.task_create(actor=alice, case=case, title="  Call the customer ")
    assert (task.title, task.position, task.done, task.created_by) == ("Call the customer", 1, False, alice)
    task = services.task_assign(actor=alice, task=task, assignee=ivan)
    task = services.task_complete(actor=ivan, task=task)
    assert task.done and task.done_by == ivan and task.done_at is not None
    task = services.task_reopen(actor=alice, task=task)
    assert not task.done and task.done_by is None and task.done_at is None
    assert _actions(case) == ["task.created", "task.assigned", "task.done", "task.reopened"]
    done = AuditEntry.objects.get(case_id=case.pk, action="task.done")
    assert done.actor == "ivan" and done.data == {"title": "Call the customer"}
    reopened = AuditEntry.objects.get(case_id=case.pk, action="task.reopened")
    assert reopened.data["was_done_by"] == "ivan"


def test_a_second_done_is_a_conflict_naming_who(case, alice, ivan):
    task = services.task_create(actor=alice, case=case, title="Freeze the account")
    services.task_complete(actor=ivan, task=task)
    with pytest.raises(Conflict, match="already done by ivan"):
        services.task_complete(actor=alice, task=task)
    assert _actions(case).count("task.done") == 1


def test_bad_input_names_the_field(case, alice, mona):
    with pytest.raises(ValidationError) as empty:
        services.task_create(actor=alice, case=case, title="   ")
    assert "title" in empty.value.message_dict
    with pytest.raises(ValidationError) as manager:
        services.task_create(actor=alice, case=case, title="Ask", assignee=mona)
    assert manager.value.message_dict["assignee"] == ["mona is not an investigator."]


def test_a_closed_case_keeps_its_tasks_as_they_were(case, alice):
    task = services.task_create(actor=alice, case=case, title="Call the customer")
    case_close(actor=alice, case=case, outcome="legit", reason="Known customer.")
    for attempt in (lambda: services.task_complete(actor=alice, task=task),
                    lambda: services.task_create(actor=alice, case=case, title="More"),
                    lambda: services.task_add_from_template(actor=alice, case=case)):
        with pytest.raises(Conflict, match="closed"):
            attempt()
    assert Task.objects.filter(case=case).count() == 1 and not Task.objects.get().done


@pytest.mark.parametrize("case_type", list(CASE_TYPES))
def test_every_case_type_has_a_checklist_added_once(alice, case_type):
    case = case_create(actor=alice, case_type=case_type, title="A case")
    added = services.task_add_from_template(actor=alice, case=case)
    assert [t.title for t in added] == [title for _, title in DEFAULT_CHECKLISTS[case_type]]
    assert [t.position for t in added] == list(range(1, len(added) + 1))
    assert services.task_add_from_template(actor=alice, case=case) == []  # a second click adds nothing


def test_the_checklist_comes_from_settings_when_given(settings, case, alice):
    settings.CASE_TASK_TEMPLATES = {"fraud_alert": [("kyc", "Re-run KYC")]}
    assert [t.title for t in services.task_add_from_template(actor=alice, case=case)] == ["Re-run KYC"]


# --- the Tasks tab ------------------------------------------------------------------------

@pytest.mark.parametrize("case_type", list(CASE_TYPES))
def test_every_case_page_has_the_tasks_and_evidence_tabs(alice_client, alice, case_type):
    if case_type == "release_risk":  # its page reads the release its case was opened for
        from casework.releases.services import release_submit
        from tests.releases.conftest import SEED

        case = release_submit(actor=alice, data=SEED).case
    else:
        case = case_create(actor=alice, case_type=case_type, title="A case")
    html = alice_client.get(f"/cases/{case.reference}/").content.decode()
    assert 'id="tab-btn-tasks">Tasks</button>' in html and 'id="tab-btn-evidence">Evidence</button>' in html
    assert 'id="case-tasks"' in html and "Add tasks from template" in html
    assert 'id="case-evidence"' in html and 'enctype="multipart/form-data"' in html


def test_the_tab_adds_does_and_reopens_with_htmx(alice_client, alice, ivan, case):
    base = f"/cases/{case.reference}/tasks/"
    html = alice_client.post(base + "add/", {"title": "Call the customer", "assignee": "ivan", "due_on": "2026-12-01"},
                             HTTP_HX_REQUEST="true").content.decode()
    assert html.startswith('<section id="case-tasks"') or 'id="case-tasks"' in html.split("\n", 2)[1]
    task = Task.objects.get(case=case)
    assert "assigned to ivan" in html and "due 2026-12-01" in html and "0 of 1 done" in html
    html = alice_client.post(f"{base}{task.pk}/done/", HTTP_HX_REQUEST="true").content.decode()
    assert "done by alice" in html and "1 of 1 done" in html and ">Reopen</button>" in html
    again = alice_client.post(f"{base}{task.pk}/done/", HTTP_HX_REQUEST="true").content.decode()
    assert "already done by alice" in again
    html = alice_client.post(f"{base}{task.pk}/reopen/", HTTP_HX_REQUEST="true").content.decode()
    assert ">Mark done</button>" in html and "0 of 1 done" in html
    html = alice_client.post(f"{base}{task.pk}/assign/", {"assignee": "nobody-such"}, HTTP_HX_REQUEST="true")
    assert "assignee: Select a valid choice" in html.content.decode()
    html = alice_client.post(f"{base}add/", {"title": ""}, HTTP_HX_REQUEST="true").content.decode()
    assert "title: This field is required." in html
    assert _actions(case) == ["task.created", "task.done", "task.reopened"]
    timeline = alice_client.get(f"/cases/{case.reference}/timeline/", {"timeline": "people"}).content.decode()
    assert 'task: done <span class="muted">“Call the customer”</span>' in timeline


def test_a_closed_case_shows_its_tasks_without_forms(alice_client, alice, case):
    services.task_create(actor=alice, case=case, title="Call the customer")
    case_close(actor=alice, case=case, outcome="legit", reason="Known customer.")
    html = alice_client.get(f"/cases/{case.reference}/tasks/").content.decode()
    assert "Call the customer" in html and "Mark done" not in html and "Add task" not in html
    assert "no longer change" in html


def test_another_cases_task_is_not_found(alice_client, alice, case):
    other = case_create(actor=alice, case_type="fraud_alert", title="Other")
    task = services.task_create(actor=alice, case=other, title="Theirs")
    assert alice_client.post(f"/cases/{case.reference}/tasks/{task.pk}/done/").status_code == 404


# --- API --------------------------------------------------------------------------------

def test_the_api_creates_lists_and_acts(api, alice, case):
    base = f"/api/cases/{case.reference}/tasks/"
    created = api.post(base, {"title": "Call the customer", "assignee": "alice"}, format="json")
    assert created.status_code == 201 and created.json()["assignee"] == "alice"
    pk = created.json()["id"]
    assert api.post(f"{base}{pk}/done/").json()["done_by"] == "alice"
    second = api.post(f"{base}{pk}/done/")
    assert second.status_code == 409 and second.json()["code"] == "task_done"
    assert api.post(f"{base}{pk}/reopen/").json()["done"] is False
    assert api.post(f"{base}{pk}/assign/", {"assignee": None}, format="json").json()["assignee"] is None
    added = api.post(f"{base}from-template/")
    assert added.status_code == 201 and len(added.json()) == len(DEFAULT_CHECKLISTS["fraud_alert"])
    listed = api.get(base).json()
    assert [t["position"] for t in listed] == list(range(1, len(listed) + 1))
    bad = api.post(base, {"title": "", "assignee": "nobody"}, format="json")
    assert bad.status_code == 400 and set(bad.json()) == {"title", "assignee"}


def test_the_api_refuses_a_manager(client, mona, case):
    from rest_framework.test import APIClient

    manager = APIClient()
    manager.force_authenticate(mona)
    assert manager.get(f"/api/cases/{case.reference}/tasks/").status_code == 403


def test_a_task_past_its_due_day_reads_overdue_until_done(alice_client, alice, case):
    import datetime

    yesterday = datetime.date.today() - datetime.timedelta(days=1)
    task = services.task_create(actor=alice, case=case, title="Call the customer", due_on=yesterday)
    assert task.is_overdue
    assert "(overdue)" in alice_client.get(f"/cases/{case.reference}/tasks/").content.decode()
    services.task_complete(actor=alice, task=task)
    assert "(overdue)" not in alice_client.get(f"/cases/{case.reference}/tasks/").content.decode()


def test_the_demo_gives_the_oldest_open_case_of_each_type_its_checklist_once(alice, ivan, settings, tmp_path):
    from casework.cases.attachments.models import Attachment
    from casework.cases.tasks.demo import demo_load_tasks
    from casework.fraud.demo_attachments import demo_load_attachments

    settings.MEDIA_ROOT = tmp_path
    fraud = case_create(actor=alice, case_type="fraud_alert", title="Oldest")
    case_create(actor=alice, case_type="fraud_alert", title="Newer")
    support = case_create(actor=alice, case_type="support_ticket", title="Ticket")
    case_close(actor=alice, case=support, outcome="no_action", reason="Spam.")
    demo_load_tasks(users={"alice": alice, "ivan": ivan})
    demo_load_attachments(users={"alice": alice})
    # A second run, after the demo's case moved on: nothing is added to another case.
    case_close(actor=alice, case=fraud, outcome="legit", reason="Known customer.")
    demo_load_tasks(users={"alice": alice, "ivan": ivan})
    demo_load_attachments(users={"alice": alice})
    tasks = list(Task.objects.order_by("position"))
    assert {t.case for t in tasks} == {fraud} and len(tasks) == len(DEFAULT_CHECKLISTS["fraud_alert"])
    assert tasks[0].done and tasks[1].assignee == ivan
    assert [a.original_name for a in Attachment.objects.filter(case=fraud)] == ["call-notes.txt"]


def test_the_tabs_cost_the_same_queries_for_many_tasks_and_files(alice_client, alice, ivan, case, settings,
                                                                    tmp_path, django_assert_max_num_queries):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from casework.cases.attachments.services import attachment_upload

    settings.MEDIA_ROOT = tmp_path
    for n in range(30):
        task = services.task_create(actor=alice, case=case, title=f"Task {n}", assignee=ivan)
        services.task_complete(actor=alice, task=task)
        attachment_upload(actor=alice, case=case, upload=SimpleUploadedFile(f"note-{n}.txt", b"note"))
    alice_client.get(f"/cases/{case.reference}/tasks/")
    # session, user, roles, the case, the tasks with their people, the investigators to assign,
    # and the read's access entry (one INSERT, once the response is sent: audit/access.py)
    with django_assert_max_num_queries(8):
        assert alice_client.get(f"/cases/{case.reference}/tasks/").content.decode().count('<li class="task') == 30
    with django_assert_max_num_queries(7):
        assert alice_client.get(f"/cases/{case.reference}/attachments/").content.decode().count("note-") == 30
