"""Who looked at a case (its team's leads and admins) and the admins' export of the access log."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from audit.access import access_record
from audit.models import AccessEntry
from casework.cases.access_log import PANEL_CAP
from tests.cases.teams_people import teams_made

pytestmark = pytest.mark.django_db


def panel(client, case):
    return client.get(f"/cases/{case.reference}/who-looked/", headers={"HX-Request": "true"})


def test_a_lead_sees_who_opened_the_case_newest_first_and_the_panel_is_no_read(client):
    t = teams_made()
    client.force_login(t.fay)
    assert client.get(f"/cases/{t.fraud_case.reference}/").status_code == 200
    client.force_login(t.leo)
    page = client.get(f"/cases/{t.fraud_case.reference}/")
    assert f'hx-get="/cases/{t.fraud_case.reference}/who-looked/"' in page.content.decode()
    reads = AccessEntry.objects.filter(case_ref=t.fraud_case.reference).count()

    response = panel(client, t.fraud_case)

    assert response.status_code == 200
    assert [(e.username, e.path) for e in response.context["rows"]] == [
        ("leo", f"/cases/{t.fraud_case.reference}/"), ("fay", f"/cases/{t.fraud_case.reference}/")]
    assert AccessEntry.objects.filter(case_ref=t.fraud_case.reference).count() == reads


def test_members_get_no_panel_and_a_403_other_teams_a_404_admins_see_it(client, admin_user):
    t = teams_made()
    client.force_login(t.fay)
    assert 'id="who-looked"' not in client.get(f"/cases/{t.fraud_case.reference}/").content.decode()
    assert panel(client, t.fraud_case).status_code == 403
    client.force_login(t.sam)
    assert panel(client, t.fraud_case).status_code == 404
    client.force_login(admin_user)
    assert panel(client, t.fraud_case).status_code == 200
    assert 'id="who-looked"' in client.get(f"/cases/{t.fraud_case.reference}/").content.decode()


def test_the_panel_shows_the_newest_reads_up_to_its_cap(client):
    t = teams_made()
    for i in range(PANEL_CAP + 5):
        access_record(t.fay, via="test", case_ref=t.fraud_case.reference, path=f"/read/{i}")
    client.force_login(t.leo)

    response = panel(client, t.fraud_case)

    rows = response.context["rows"]
    assert len(rows) == PANEL_CAP and response.context["more"]
    assert (rows[0].path, rows[-1].path) == (f"/read/{PANEL_CAP + 4}", "/read/5")
    assert f"The newest {PANEL_CAP} reads" in response.content.decode()


def rows_of(response) -> list[dict]:
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_an_admin_exports_a_persons_reads_and_the_export_is_on_record(client, admin_user):
    t = teams_made()
    client.force_login(t.fay)
    client.get(f"/cases/{t.fraud_case.reference}/")
    client.get(f"/cases/{t.fraud_case.reference}/timeline/")  # part of the page: no read
    client.force_login(admin_user)

    response = client.get("/audit/access.csv?user=fay")

    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="access-fay-')
    assert [(r["username"], r["case_ref"], r["object_type"], r["via"]) for r in rows_of(response)] == [
        ("fay", t.fraud_case.reference, "case", "cases:detail")]
    export = AccessEntry.objects.get(object_type="export")
    assert (export.username, export.object_id, export.path) == ("root", "user=fay", "/audit/access.csv?user=fay")


def test_an_admin_exports_a_cases_reads_oldest_first(client, admin_user):
    t = teams_made()
    for who in (t.fay, t.leo, t.fay):
        access_record(who, via="test", case_ref=t.fraud_case.reference)
    access_record(t.sam, via="test", case_ref=t.support_case.reference)
    client.force_login(admin_user)

    response = client.get(f"/audit/access.csv?case={t.fraud_case.reference.lower()}")

    assert [r["username"] for r in rows_of(response)] == ["fay", "leo", "fay"]
    assert AccessEntry.objects.get(object_type="export").case_ref == t.fraud_case.reference


@pytest.mark.parametrize(("query", "field"), [("", "user"), ("?user=nobody", "user"), ("?case=not%20a%20ref", "case"),
                                              ("?user=fay&case=FRA", "case")])
def test_a_missing_or_bad_parameter_is_a_400_naming_it(client, admin_user, query, field):
    teams_made()
    client.force_login(admin_user)

    response = client.get(f"/audit/access.csv{query}")

    assert response.status_code == 400
    assert response.content.decode().startswith(f"{field}:")
    assert not AccessEntry.objects.filter(object_type="export").exists()


def test_only_admins_export(client):
    t = teams_made()
    client.force_login(t.leo)

    assert client.get("/audit/access.csv?user=fay").status_code == 403


def test_the_command_exports_a_persons_reads_and_is_on_record():
    t = teams_made()
    access_record(t.fay, via="test", case_ref=t.fraud_case.reference)
    out = io.StringIO()

    call_command("export_access_log", user="fay", stdout=out)

    assert [(r["username"], r["case_ref"]) for r in csv.DictReader(io.StringIO(out.getvalue()))] == [
        ("fay", t.fraud_case.reference)]
    export = AccessEntry.objects.get(object_type="export")
    assert (export.username, export.object_id) == ("manage.py export_access_log", "user=fay")
    with pytest.raises(CommandError, match="case:"):
        call_command("export_access_log", case="??")
