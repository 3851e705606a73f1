"""import_access_data / export_access_data: the seed's files in, every bad row named by file,
row and field, nothing half-imported; and the same files out again."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.management import CommandError, call_command

from agents.models import AgentRun
from casework.access.models import (
    AccessLevel,
    DirectAuthorisation,
    Employee,
    HRMutation,
    Role,
    SickLeave,
    System,
    Vacation,
)
from casework.cases.models import Case

pytestmark = pytest.mark.django_db

FILES = {
    "access_levels.csv": "Name,Rank\nRead,10\nWrite,20\nAdmin,30\n",
    "systems.csv": "System,Description,Available\nFinanceApp,Ledger,true\nPayroll,Salaries,false\n",
    "roles.csv": "RoleID,RoleName,Department,Description\nR001,Finance Admin,Finance,\nR003,Finance Analyst,Finance,\n",
    "role_authorisations.csv": "RoleID,System,AccessLevel\nR001,FinanceApp,Admin\nR003,FinanceApp,Read\n",
    # The manager (u003) comes after her reports; Username links a login.
    "users.csv": (
        "UserID,Name,Department,JobTitle,RoleID,Status,Email,Manager,HireDate,TerminationDate,Username\n"
        "u001,Alice Johnson,Finance,Finance Admin,R001,Active,alice@company.com,u003,2020-01-15,,\n"
        "u002,Bob Smith,Finance,Finance Analyst,R003,Active,bob@company.com,u003,2019-03-10,,\n"
        "u004,Erin Black,Finance,Finance Analyst,R003,Removed,erin@company.com,u003,2022-02-14,2025-09-15,\n"
        "u003,Grace Hopper,Finance,Finance Manager,,Active,grace@company.com,,2015-01-01,,mona\n"
    ),
    "authorisations.csv": (
        "AuthorisationID,UserID,System,AccessLevel,GrantedBy,GrantedOn,ExpiresOn,Status\n"
        "A001,u001,FinanceApp,Admin,grace,2020-01-15,,Active\n"
        "A003,u002,FinanceApp,Write,grace,2018-07-22,2025-10-01,Revoked\n"
    ),
    "sickLeave.csv": (
        "# SICK LEAVE DATA\n# Used to verify claims.\n"
        "UserID,StartDate,EndDate,Status\nu001,2025-10-20,2025-10-22,approved\n"
    ),
    "vacation.csv": "UserID,StartDate,EndDate,Status\nu001,2025-08-01,2025-08-14,approved\n",
    "hr_mutations.csv": (
        "MutationID,Timestamp,ChangedBy,ChangedFor,ChangeType,FieldChanged,OldValue,NewValue,System,AccessLevel,"
        "Metadata,change_investigation,Reason,ManagerID\n"
        "M-1,2025-10-21T10:00:00,u002,u004,Update,Access level,Read,Write,FinanceApp,Admin,{},Pending,Cover,u003\n"
        "M-2,2025-10-23T10:00:00+00:00,u001,u002,Update,Access level,Read,Write,FinanceApp,Admin,{},"
        "Advisory Report Generated,,\n"
    ),
}


def write(directory, files):
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    return directory


def run_import(directory, *args):
    out = io.StringIO()
    call_command("import_access_data", str(directory), *args, stdout=out)
    return out.getvalue()


def counts():
    return [m.objects.count() for m in (AccessLevel, System, Role, Employee, DirectAuthorisation, SickLeave, Vacation,
                                        HRMutation, Case)]


def test_it_imports_the_seed_files_and_starts_pending_investigations(tmp_path, mona):
    write(tmp_path, FILES)
    (tmp_path / "audit_trail.csv").write_text("AuditID,MutationID\n")
    output = run_import(tmp_path)
    assert "users.csv: created 4" in output
    assert "audit_trail.csv: skipped" in output
    assert "1 investigation(s) started" in output
    grace = Employee.objects.get(employee_id="u003")
    assert grace.user == mona
    assert set(grace.reports.values_list("employee_id", flat=True)) == {"u001", "u002", "u004"}
    assert Employee.objects.get(employee_id="u004").status == "terminated"
    a3 = DirectAuthorisation.objects.get(authorisation_id="A003")
    assert (a3.status, str(a3.valid_to)) == ("revoked", "2025-10-01")
    assert not System.objects.get(code="Payroll").available
    pending, history = HRMutation.objects.get(mutation_id="M-1"), HRMutation.objects.get(mutation_id="M-2")
    assert pending.changed_at.tzinfo is not None and pending.manager == grace
    assert history.status == "advisory_report_generated"
    assert pending.case.reference.startswith("ACC-")
    # Pending is investigated (on commit); history is not.
    assert list(AgentRun.objects.values_list("case_id", "mode")) == [(pending.case_id, "investigate")]


def test_importing_the_same_files_again_changes_nothing(tmp_path, mona):
    write(tmp_path, FILES)
    run_import(tmp_path, "--no-investigate")
    before = counts()
    output = run_import(tmp_path, "--no-investigate")
    assert counts() == before
    assert "hr_mutations.csv: unchanged 2" in output
    assert "created" not in output and "updated" not in output
    assert not AgentRun.objects.exists()


def test_a_changed_row_updates_the_existing_one(tmp_path, mona):
    write(tmp_path, FILES)
    run_import(tmp_path, "--no-investigate")
    write(tmp_path, {"systems.csv": "System,Description,Available\nPayroll,Salaries,true\n"})
    for name in list(FILES):
        if name != "systems.csv":
            (tmp_path / name).unlink()
    assert "systems.csv: updated 1" in run_import(tmp_path)
    assert System.objects.get(code="Payroll").available


@pytest.mark.parametrize(("file", "text", "expected"), [
    ("users.csv", FILES["users.csv"].replace("bob@company.com,u003", "bob@company.com,u999"),
     "users.csv row 3, field Manager: no employee 'u999'"),
    ("users.csv", FILES["users.csv"].replace("2019-03-10", "10/03/2019"),
     "users.csv row 3, field HireDate: '10/03/2019' is not a date (YYYY-MM-DD)"),
    ("users.csv", FILES["users.csv"].replace(",mona\n", ",nobody\n"),
     "users.csv row 5, field Username: no login 'nobody'"),
    ("users.csv", FILES["users.csv"].replace("alice@company.com", "not-an-email"),
     "users.csv row 2, field Email: Enter a valid email address."),
    ("authorisations.csv", FILES["authorisations.csv"].replace("A001,u001,FinanceApp", "A001,u001,FinanceAp"),
     "authorisations.csv row 2, field System: no system 'FinanceAp'"),
    ("authorisations.csv", FILES["authorisations.csv"].replace("2018-07-22,2025-10-01", "2025-10-02,2025-10-01"),
     "authorisations.csv row 3, field ExpiresOn: is before GrantedOn"),
    ("sickLeave.csv", FILES["sickLeave.csv"].replace("2025-10-20,2025-10-22", "2025-10-22,2025-10-20"),
     "sickLeave.csv row 4, field EndDate: is before StartDate"),
    ("vacation.csv", "UserID,StartDate,Status\nu001,2025-08-01,approved\n",
     "vacation.csv row 1, field EndDate: column missing from the header"),
    ("roles.csv", "RoleID,RoleName,Colour\nR001,Finance Admin,blue\n",
     "roles.csv row 1, field Colour: unknown column"),
    ("access_levels.csv", "Name,Rank\nRead,ten\n", "access_levels.csv row 2, field Rank: 'ten' is not a whole number"),
    ("hr_mutations.csv", FILES["hr_mutations.csv"].replace("2025-10-21T10:00:00", "yesterday"),
     "hr_mutations.csv row 2, field Timestamp: 'yesterday' is not an ISO 8601 date and time"),
    ("hr_mutations.csv", FILES["hr_mutations.csv"].replace(",Pending,", ",Sort of done,"),
     "hr_mutations.csv row 2, field change_investigation: 'Sort of done' is not one of"),
    ("hr_mutations.csv", FILES["hr_mutations.csv"].replace(",u002,u004,", ",u002,,"),
     "hr_mutations.csv row 2, field ChangedFor: is required"),
    ("hr_mutations.csv", FILES["hr_mutations.csv"].replace("Admin,{},Pending", "Admin,[1],Pending"),
     "hr_mutations.csv row 2, field Metadata: is not a JSON object"),
])
def test_a_bad_row_is_named_and_nothing_is_imported(tmp_path, mona, file, text, expected):
    write(tmp_path, FILES | {file: text})
    with pytest.raises(CommandError) as exc:
        run_import(tmp_path)
    assert "Nothing was imported" in str(exc.value)
    assert expected in str(exc.value)
    assert counts() == [0] * 9
    assert not AgentRun.objects.exists()


def test_every_problem_is_listed_at_once(tmp_path, mona):
    write(tmp_path, FILES | {"vacation.csv": "UserID,StartDate,EndDate\nu404,2025-01-01,2025-01-02\n"
                                             "u001,someday,2025-01-02\n"})
    with pytest.raises(CommandError) as exc:
        run_import(tmp_path)
    message = str(exc.value)
    assert "2 problem(s)" in message
    assert "vacation.csv row 2, field UserID: no employee 'u404'" in message
    assert "vacation.csv row 3, field StartDate: 'someday' is not a date" in message


def test_a_directory_without_data_files_is_refused(tmp_path):
    with pytest.raises(CommandError, match="holds none of"):
        run_import(tmp_path)


def test_export_writes_every_file_and_reimports_cleanly(tmp_path, mona, asked):
    out = tmp_path / "out"
    stdout = io.StringIO()
    call_command("export_access_data", str(out), stdout=stdout)
    assert "pending_actions.csv: 1 row(s)" in stdout.getvalue()
    with (out / "hr_mutations.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert rows[0]["change_investigation"] == "Awaiting User Response"
    with (out / "audit_trail.csv").open() as handle:
        trail = list(csv.DictReader(handle))
    assert [(r["OldStatus"], r["NewStatus"]) for r in trail] == [
        ("Pending", "Investigation Started"), ("Investigation Started", "Clarification Requested"),
        ("Clarification Requested", "Request to the Employee Queued - Email Not Sent Yet"),
        ("Request to the Employee Queued - Email Not Sent Yet", "Awaiting User Response")]  # issue 43
    with (out / "pending_actions.csv").open() as handle:
        actions = list(csv.DictReader(handle))
    assert actions[0]["type"] == "employee_clarification" and actions[0]["status"] == "open"
    before = counts()
    output = run_import(out)
    assert counts() == before
    assert "created" not in output
