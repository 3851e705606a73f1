"""Secrets and absence details are encrypted at rest (issue 42): the database holds Fernet
tokens, a key rotation leaves every value readable, `rotate_field_keys` moves them to the new
key (audited), and a pg_dump of the database shows none of them in clear.

Here, beside the access fixtures, because a claim's absence details need a whole access flow;
the webhook endpoint's secrets come from the outbox's own service."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from datetime import date

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.db import connection

from audit.models import AuditEntry
from casework.access.models import EmployeeClaim
from casework.outbox.models import Endpoint
from casework.outbox.services import endpoint_create, endpoint_rotate_secret
from casework.security.encryption import FieldDecryptionError

# What the awaiting_manager fixture's claim says (tests/access/conftest.py), as it would be stored.
ABSENCE = ("sick_leave_cover", "2025-11-09", "2025-11-12", "Kees was ill and asked me to.",
           "Confirmed: Kees was on approved sick leave.", "An approved sick leave covers 2025-11-10")
CLAIM_COLUMNS = ("claim_type", "period_start", "period_end", "explanation", "validation")


@pytest.fixture
def endpoint(db, settings):
    """An endpoint mid-rotation: a secret and a previous one, both stored (nothing is sent to it)."""
    settings.WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]
    created, _ = endpoint_create(actor="system", url="http://127.0.0.1:9/hook", description="CI")
    endpoint, _ = endpoint_rotate_secret(actor="system", endpoint=created)
    return endpoint


def _raw(table: str, columns: tuple[str, ...], pk: int) -> tuple:
    qn = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(qn(c) for c in columns)} FROM {qn(table)} WHERE id = %s", [pk])
        return cursor.fetchone()


def _readable(endpoint: Endpoint, claim: EmployeeClaim) -> tuple:
    e = Endpoint.objects.get(pk=endpoint.pk)
    c = EmployeeClaim.objects.get(pk=claim.pk)
    return (e.secret, e.previous_secret, c.claim_type, c.period_start, c.period_end, c.explanation, c.validation)


def test_secrets_and_absence_details_are_stored_as_ciphertext(endpoint, awaiting_manager):
    claim = awaiting_manager.mutation.requests.get(kind="employee_clarification").claim
    stored = _raw("outbox_endpoint", ("secret", "previous_secret"), endpoint.pk) + _raw(
        "access_employeeclaim", CLAIM_COLUMNS, claim.pk)
    assert all(str(value).startswith("gAAAAA") for value in stored), stored
    assert not any(secret in str(stored) for secret in (endpoint.secret, endpoint.previous_secret, *ABSENCE))
    # The ORM reads them whole.
    assert endpoint.secret.startswith("whsec_") and Endpoint.objects.get(pk=endpoint.pk).secret == endpoint.secret
    assert claim.explanation == "Kees was ill and asked me to." and claim.period_start.isoformat() == "2025-11-09"
    assert claim.validation["message"] == "Confirmed: Kees was on approved sick leave."


@pytest.fixture
def agent_records(awaiting_manager):
    """A run of the access pipeline as it stores what it read: the claim in a call's input, the
    check's answer in its output and the run's state, and a tool call's arguments (the pipeline
    itself runs in the dump test below, which needs a transactional database)."""
    from agents.models import AgentCall, AgentRun

    case = awaiting_manager.mutation.case
    answer = {"message": ABSENCE[4], "checks": [{"check": ABSENCE[5], "passed": True}]}
    run = AgentRun.objects.create(case=case, pipeline="access", status="completed",
                                  state={"results": {"claim_check": {"output": answer}}})
    call = AgentCall.objects.create(run=run, key="claim_check", name="claim_check", status="ok",
                                    input={"claim": {"explanation": ABSENCE[3], "period_start": ABSENCE[1]}},
                                    output=answer)
    tool = AgentCall.objects.create(run=run, kind="tool", key="claim_check.sick_leave.1", name="sick_leave",
                                    status="ok", input={"from": ABSENCE[1], "to": ABSENCE[2]},
                                    output={"result": "sick_leave:1"})
    return run, call, tool


def test_the_agents_runs_and_calls_are_stored_as_ciphertext(agent_records):
    run, *calls = agent_records
    assert str(_raw("agents_agentrun", ("state",), run.pk)[0]).startswith("gAAAAA")
    for call in calls:
        stored = _raw("agents_agentcall", ("input", "output"), call.pk)
        assert all(str(value).startswith("gAAAAA") for value in stored), stored
        assert not any(detail in str(stored) for detail in ABSENCE)
    # The ORM reads them whole.
    from agents.models import AgentCall, AgentRun

    assert AgentRun.objects.get(pk=run.pk).state["results"]["claim_check"]["output"]["message"] == ABSENCE[4]
    assert AgentCall.objects.get(pk=calls[1].pk).input == {"from": ABSENCE[1], "to": ABSENCE[2]}


def test_sick_leave_and_vacation_dates_are_stored_as_ciphertext_and_still_answer_the_checks(org):
    """The records the claim check reads: when Kees was ill or away is health data, so their
    dates are ciphertext too, and the checks (which read them by employee) still find them."""
    from casework.access.models import SickLeave, Vacation

    for model, table, period in ((SickLeave, "access_sickleave", ("2025-11-09", "2025-11-12")),
                                 (Vacation, "access_vacation", ("2025-08-01", "2025-08-14"))):
        record = model.objects.get(employee=org.kees)
        stored = _raw(table, ("start_date", "end_date"), record.pk)
        assert all(value.startswith("gAAAAA") for value in stored), stored
        assert not any(day in str(stored) for day in period)
        assert (record.start_date.isoformat(), record.end_date.isoformat()) == period
    assert [r.pk for r in SickLeave.objects.covering(org.kees, date(2025, 11, 10), status="approved")] == [
        SickLeave.objects.get(employee=org.kees).pk]
    assert SickLeave.objects.covering(org.kees, date(2025, 11, 13)) == []
    # What the database's constraints checked before, the model checks now.
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError, match="already has a record for this period"):
        SickLeave(employee=org.kees, start_date=date(2025, 11, 9), end_date=date(2025, 11, 12)).full_clean()
    with pytest.raises(ValidationError, match="cannot be before the first"):
        SickLeave.objects.create(employee=org.kees, start_date=date(2025, 11, 12), end_date=date(2025, 11, 9))


def test_a_key_rotation_leaves_every_secret_readable(settings, endpoint, awaiting_manager, agent_records):
    claim = awaiting_manager.mutation.requests.get(kind="employee_clarification").claim
    old = settings.FIELD_ENCRYPTION_KEYS[0]
    new = Fernet.generate_key().decode()
    before = _readable(endpoint, claim)
    stored_before = _raw("outbox_endpoint", ("secret",), endpoint.pk)

    settings.FIELD_ENCRYPTION_KEYS = [new, old]  # the new key first, the old one kept
    assert _readable(endpoint, claim) == before
    out = io.StringIO()
    call_command("rotate_field_keys", stdout=out)
    assert "outbox.endpoint.secret: " in out.getvalue() and "access.employeeclaim.explanation: " in out.getvalue()
    assert _raw("outbox_endpoint", ("secret",), endpoint.pk) != stored_before

    settings.FIELD_ENCRYPTION_KEYS = [new]  # the old key dropped
    assert _readable(endpoint, claim) == before
    settings.FIELD_ENCRYPTION_KEYS = [old]  # and it no longer opens anything
    with pytest.raises(FieldDecryptionError, match="cannot be decrypted"):
        Endpoint.objects.get(pk=endpoint.pk)

    record = AuditEntry.objects.get(action="security.field_keys_rotated")
    assert record.data["values"]["outbox.endpoint.secret"] >= 1
    assert record.data["values"]["access.employeeclaim.period_start"] >= 1
    # The agents' records are under the same key ring and the same command.
    assert record.data["values"]["agents.agentrun.state"] >= 1 and record.data["values"]["agents.agentcall.output"] >= 1
    assert old not in str(record.data) and new not in str(record.data) and endpoint.secret not in str(record.data)


def test_rotation_stops_at_a_value_no_key_opens(settings, endpoint):
    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]  # the key in use lost
    with pytest.raises(Exception, match="cannot be decrypted with FIELD_ENCRYPTION_KEYS"):
        call_command("rotate_field_keys", stdout=io.StringIO())
    assert not AuditEntry.objects.filter(action="security.field_keys_rotated").exists()


@pytest.mark.django_db(transaction=True)
def test_a_database_dump_shows_no_secret_and_no_absence_detail(endpoint, asked, org):
    """pg_dump of the test database, with the data committed as a backup would hold it: the
    employee's claim submitted through their link, and its validation run by the (offline)
    pipeline on commit."""
    if connection.vendor != "postgresql":
        pytest.skip("pg_dump needs PostgreSQL: run with DATABASE_URL=postgres://... (make test does)")
    # On PostgreSQL its client tools are part of the set-up (tests/demo_snapshot.py needs them
    # too): a missing pg_dump is a broken machine, never a pass.
    assert shutil.which("pg_dump"), "pg_dump is not installed (apt-get install postgresql-client)"
    from casework.access.links import link_token
    from casework.access.services import claim_submit

    claim = claim_submit(token=link_token(asked), claim_type="sick_leave_cover", colleague=org.kees,
                         period_start=date(2025, 11, 9), period_end=date(2025, 11, 12),
                         explanation="Kees was ill and asked me to.")
    claim.refresh_from_db()
    assert claim.validation_status != "pending"  # the pipeline ran and recorded what the records say
    from agents.models import AgentCall

    # Its agents' calls and their tool calls are in the dump, with their audit entries.
    assert AgentCall.objects.filter(kind="tool").exists() and AgentCall.objects.filter(kind="agent").exists()
    assert AuditEntry.objects.filter(action="agent.tool_called").exists()
    db = connection.settings_dict
    env = {"PGPASSWORD": db.get("PASSWORD") or "", "PATH": "/usr/bin:/bin"}
    dump = subprocess.run(
        ["pg_dump", "--data-only", "-h", db.get("HOST") or "127.0.0.1", "-p", str(db.get("PORT") or 5432),
         "-U", db.get("USER") or "postgres", db["NAME"]],
        capture_output=True, text=True, timeout=60, env=env, check=True).stdout
    assert "Kees" in dump  # the dump is the data: the colleague's name is there (no health fact)
    endpoint = Endpoint.objects.get(pk=endpoint.pk)
    for secret in (endpoint.secret, endpoint.previous_secret, endpoint.secret.removeprefix("whsec_")):
        assert secret not in dump, _tables_holding(dump, secret)
    # The whole dump, every table (the agents' runs and calls, the audit trail, the outbox, the
    # notifications...): no absence detail, and none of Kees's absence dates (tests/access/
    # conftest.py: sick 9-12 Nov 2025, away 1-14 Aug 2025) in any form a prompt, an answer or a
    # record would write them.
    details = ("Kees was ill and asked me to.", "sick_leave_cover", claim.validation.get("message", "-"),
               *_absence_dates())
    leaks = {detail: _tables_holding(dump, detail) for detail in details if detail in dump}
    assert leaks == {}, f"in clear: {leaks}"
    for table in ("public.access_sickleave", "public.access_vacation"):
        rows = [line for name, _, line in _copy_blocks(dump) if name == table]
        assert rows and not any(re.search(r"\t20\d\d-\d\d-\d\d", line) for line in rows), rows


def _absence_dates() -> list[str]:
    """Kees's absence dates as ISO dates and as a person writes them ("9 Nov 2025", "November 9")."""
    # (10 Nov is left out: it is the day of the change itself, on the case as it should be.)
    days = [date(2025, 11, d) for d in (9, 11, 12)] + [date(2025, 8, 1), date(2025, 8, 14)]
    return [form for day in days for form in (day.isoformat(), f"{day.day} {day:%b} {day.year}",
                                              f"{day:%B} {day.day}")]


def _copy_blocks(dump: str):
    """(table, its columns, the line) for each line of a plain pg_dump; table None outside COPY."""
    table, columns = None, []
    for line in dump.splitlines():
        if line.startswith("COPY "):
            table = line.split()[1]
            columns = [c.strip(' "') for c in line[line.index("(") + 1:line.index(")")].split(",")]
            yield None, [], line
        elif line == "\\.":
            table = None
            yield None, [], line
        else:
            yield table, columns, line


def _tables_holding(dump: str, text: str) -> list[str]:
    """The tables whose COPY block in a plain pg_dump holds `text` (an audit entry's with its action)."""
    found = set()
    for table, columns, line in _copy_blocks(dump):
        if table and text in line:
            action = line.split("\t")[columns.index("action")] if table == "public.audit_auditentry" else ""
            found.add(f"{table} ({action})" if action else table)
    return sorted(found)
