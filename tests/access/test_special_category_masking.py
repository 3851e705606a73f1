"""An absence is special-category (issue 41): the kind and dates of the colleague's absence an
employee's claim names (and what quotes them) are shown whole to the teams owning access
changes only; an admin outside them sees them withheld in the page, the API and the export.
The manager the validation request is addressed to sees the claim they are asked to judge."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from audit.models import AuditEntry
from casework.people.roles import ADMIN, INVESTIGATOR
from casework.people.services import user_create
from casework.people.teams import team_create, team_member_set

pytestmark = pytest.mark.django_db

# What the awaiting_manager fixture's claim says (tests/access/conftest.py).
WHOLE = ("I covered for a colleague on sick leave", "9 Nov 2025", "Kees was ill", "approved sick leave")


@pytest.fixture
def ines(db):
    """In IAM, the team owning access changes."""
    iam = team_create(actor="system", name="IAM", case_types=["access_change"])
    user = user_create(actor="system", username="ines", password="ines-pass-123", role=INVESTIGATOR)
    team_member_set(actor="system", team=iam, user=user)
    return user


@pytest.fixture
def root(db):
    """An admin in no team: sees every case, special-category fields masked."""
    return user_create(actor="system", username="root", password="root-pass-123", role=ADMIN)


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_an_admin_outside_iam_sees_the_absence_withheld_on_the_case_page(client, awaiting_manager, root):
    client.force_login(root)
    page = client.get(f"/cases/{awaiting_manager.mutation.case.reference}/").content.decode()
    assert 'id="claim-withheld"' in page
    for text in WHOLE:
        assert text not in page
    assert "Kees Bakker" in page  # who was covered is no health fact
    assert "Confirmed by the records" in page  # nor whether the records confirm it


def test_an_iam_member_sees_the_absence_on_the_case_page(client, awaiting_manager, ines):
    client.force_login(ines)
    page = client.get(f"/cases/{awaiting_manager.mutation.case.reference}/").content.decode()
    assert 'id="claim-withheld"' not in page
    for text in WHOLE:
        assert text in page


def test_the_api_masks_the_absence_for_the_admin_not_for_iam(awaiting_manager, root, ines):
    url = f"/api/access/mutations/{awaiting_manager.mutation.case.reference}/"
    masked = _api(root).get(url).json()["claim"]
    assert masked["claim_type"] == masked["period_start"] == masked["explanation"] == "withheld (special category)"
    assert masked["validation"] == "withheld (special category)" and masked["colleague"] == "u002"
    assert "sick" not in str(masked) and "2025-11" not in str(masked)
    whole = _api(ines).get(url).json()["claim"]
    assert whole["claim_type"] == "sick_leave_cover" and whole["period_start"] == "2025-11-09"
    assert whole["validation"]["message"] == "Confirmed: Kees was on approved sick leave."


def test_the_addressed_manager_sees_the_claim_they_judge(awaiting_manager, org):
    items = _api(org.mona_user).get("/api/access/inbox/").json()
    assert items[0]["claim"]["claim_type"] == "sick_leave_cover"
    assert items[0]["claim"]["period_end"] == "2025-11-12"


def _read(path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_the_export_withholds_absences_from_the_admin_and_gives_them_to_iam(awaiting_manager, root, ines, tmp_path):
    call_command("export_access_data", str(tmp_path / "root"), "--as", "root", stdout=io.StringIO())
    sick = _read(tmp_path / "root" / "sickLeave.csv")
    assert sick == [["UserID", "StartDate", "EndDate", "Status"]]
    assert len(_read(tmp_path / "root" / "vacation.csv")) == 1
    pending = (tmp_path / "root" / "pending_actions.csv").read_text()
    assert "Kees was ill" not in pending and "sick leave" not in pending
    assert "withheld (special category)" in pending
    entry = AuditEntry.objects.filter(action="access.data_exported").latest("id")
    assert entry.actor == "root" and entry.data["special_category"] == "withheld"

    call_command("export_access_data", str(tmp_path / "ines"), "--as", "ines", stdout=io.StringIO())
    assert _read(tmp_path / "ines" / "sickLeave.csv")[1] == ["u002", "2025-11-09", "2025-11-12", "approved"]
    assert "Kees was ill" in (tmp_path / "ines" / "pending_actions.csv").read_text()


def test_the_export_names_an_unknown_person(tmp_path, db):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="--as: no active user named 'nobody'"):
        call_command("export_access_data", str(tmp_path), "--as", "nobody")


@pytest.mark.django_db(transaction=True)  # the agent's tools run on threads (as in test_agents.py)
def test_the_offline_analysts_report_names_no_kind_or_dates_of_an_absence(submit):
    from agents.runtime.runner import run_agent
    from casework.access.agents.pipeline import ADVISORY
    from casework.access.agents.tools import employee_row, mutation_row
    from casework.access.states import AccessStatus

    mutation = submit(investigate=False)
    claim = {"claim_type": "sick_leave_cover", "claim_type_label": "Sick leave cover", "validation": "valid",
             "explanation": "Kees was ill.", "colleague_name": "Kees", "period_start": "2025-11-09",
             "period_end": "2025-11-12", "validation_detail": {"message": "Kees was on approved sick leave."}}
    result = run_agent(ADVISORY, {
        "action": "generate_advisory_report", "mutation_id": mutation.mutation_id, "status": "approved",
        "status_label": AccessStatus("approved").label, "report_kind": "standard",
        "context": {"mutation": mutation_row(mutation), "changed_by": employee_row(mutation.changed_by),
                    "changed_for": employee_row(mutation.changed_for)}, "rights_check": {"authorized": False, "message": "no"},
        "claim": claim, "manager_verdict": {"approved": True, "comment": "ok", "manager": "Mona"}, "failures": []})
    assert result.ok, result.error
    prose = result.output["summary"] + " ".join(result.output["details"])
    assert "covered Kees's absence" in prose
    for special in ("sick", "2025-11-09", "2025-11-12", "ill"):
        assert special not in prose
