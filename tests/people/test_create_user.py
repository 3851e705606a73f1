"""`manage.py create_user NAME --role ...` (issue 13): a login in a role without the admin
site, which the access import's Username column can then name."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from audit.models import AuditEntry
from casework.access.models import Employee
from casework.people.roles import user_roles
from tests.access.test_import import FILES, run_import, write

pytestmark = pytest.mark.django_db


def create(*args) -> str:
    out = io.StringIO()
    call_command("create_user", *args, stdout=out)
    return out.getvalue()


def test_it_creates_a_user_in_a_role_and_prints_a_generated_password_once(client):
    output = create("grace", "--role", "manager", "--email", "grace@company.com")
    assert "Created grace (manager) <grace@company.com>." in output
    password = output.split("Password (shown once): ")[1].strip()
    grace = User.objects.get(username="grace")
    assert user_roles(grace) == {"manager"} and grace.email == "grace@company.com" and not grace.is_staff
    assert client.login(username="grace", password=password)
    assert AuditEntry.objects.filter(action="user.created", data__username="grace").exists()


def test_an_admin_is_staff_and_a_second_create_is_refused():
    create("ada", "--role", "admin", "--password", "ada-administers-1")
    assert User.objects.get(username="ada").is_staff
    with pytest.raises(CommandError, match="A user named 'ada' already exists."):
        create("ada", "--role", "investigator")


def test_an_unknown_role_is_refused():
    with pytest.raises(CommandError, match="invalid choice: 'boss'"):
        create("bob", "--role", "boss")


def test_the_access_import_links_a_user_the_command_created(tmp_path):
    create("grace", "--role", "manager")
    files = {**FILES, "users.csv": FILES["users.csv"].replace(",mona\n", ",grace\n")}
    run_import(write(tmp_path, files))
    assert Employee.objects.get(employee_id="u003").user.username == "grace"


def test_a_release_manager_works_cases_and_decides_releases(client):
    from casework.people.roles import RELEASE_MANAGER, has_role, is_investigator

    output = create("rita", "--role", "release_manager", "--password", "rita-releases-1")
    assert "Created rita (release_manager)." in output
    rita = User.objects.get(username="rita")
    assert user_roles(rita) == {RELEASE_MANAGER} and not rita.is_staff
    assert is_investigator(rita) and has_role(rita, RELEASE_MANAGER)
    assert client.login(username="rita", password="rita-releases-1")
    assert client.get("/cases/").status_code == 200
