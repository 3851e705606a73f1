"""A small organisation for access-change tests.

Finance: Mona Marsh manages Priya (analyst: Write on FinanceApp, her old Admin grant ended
in 2024), Kees (Finance admin, on sick leave 9-12 Nov 2025) and Jan. IT: Mark Mensah
manages Sara. Payroll's authorisation registry is down. The change under investigation is
usually Priya's: on 10 Nov 2025 she changed Jan's FinanceApp access, which needs Admin.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from types import SimpleNamespace

import pytest

from casework.access.models import (
    AccessLevel,
    DirectAuthorisation,
    Employee,
    InfoRequest,
    Role,
    RoleAuthorisation,
    SickLeave,
    System,
    Vacation,
)
from casework.people.roles import MANAGER
from casework.people.services import user_create

CHANGED_AT = datetime(2025, 11, 10, 9, 14, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@dataclass
class Mail:
    """One message as the SMTP server received it."""

    to: list[str]
    subject: str
    body: str


class Inbox:
    """What reached the real SMTP server (tests/support/smtp.py), in arrival order."""

    def __init__(self, server):
        self.server = server

    def __iter__(self):
        return iter(self._read())

    def __len__(self) -> int:
        return len(self.server.received)

    def __getitem__(self, index):
        return self._read()[index]

    def clear(self) -> None:
        self.server.received.clear()

    def _read(self) -> list[Mail]:
        return [Mail(to=[a.addr_spec for a in m["To"].addresses], subject=str(m["Subject"]),
                     body=m.get_body(("plain",)).get_content()) for m in self.server.received]


@pytest.fixture(autouse=True)
def inbox(settings):
    """Every e-mail of these tests goes through Django's SMTP backend to a real SMTP server on
    127.0.0.1 (aiosmtpd), and the tests read what it received."""
    from tests.support.smtp import SmtpServer

    server = SmtpServer()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    yield Inbox(server)
    server.close()


@pytest.fixture(autouse=True)
def _requests_without_approval(settings):
    """These tests follow the flow past its requests: send_notification runs without waiting
    for a person's approval here (its default is "always"; tests/access/test_approvals*.py and test_demo.py
    test the wait)."""
    settings.AGENT_APPROVALS = {**settings.AGENT_APPROVALS, "send_notification": {"*": "never"}}


@pytest.fixture(autouse=True)
def _retry_at_once(settings):
    """The flows here make a failed step's later attempts at once (test_retry_schedule.py
    checks the backoff itself)."""
    settings.ACCESS_RETRY_COUNTDOWNS = [0]


@pytest.fixture
def mark(db):
    return user_create(actor="system", username="mark", password="mark-pass-123", role=MANAGER,
                       first_name="Mark", last_name="Mensah", email="mark@example.com")


@pytest.fixture
def org(db, mona, mark):
    mona.first_name, mona.last_name, mona.email = "Mona", "Marsh", "mona@example.com"
    mona.save()
    read = AccessLevel.objects.create(name="Read", rank=10)
    write = AccessLevel.objects.create(name="Write", rank=20)
    admin = AccessLevel.objects.create(name="Admin", rank=30)
    finance = System.objects.create(code="FinanceApp", description="General ledger")
    hr = System.objects.create(code="HRPortal")
    payroll = System.objects.create(code="Payroll", available=False)
    analyst = Role.objects.create(role_id="R-FA", name="Finance Analyst", department="Finance")
    fin_admin = Role.objects.create(role_id="R-FD", name="Finance Admin", department="Finance")
    RoleAuthorisation.objects.create(role=analyst, system=finance, access_level=read)
    RoleAuthorisation.objects.create(role=fin_admin, system=finance, access_level=admin)
    RoleAuthorisation.objects.create(role=fin_admin, system=payroll, access_level=write)

    def employee(eid, name, dept, **kw):
        return Employee.objects.create(employee_id=eid, name=name, department=dept,
                                       email=f"{name.split()[0].lower()}@example.com", hire_date=date(2020, 1, 1), **kw)

    mona_e = employee("u100", "Mona Marsh", "Finance", job_title="Finance Manager", user=mona)
    mark_e = employee("u200", "Mark Mensah", "IT", job_title="IT Manager", user=mark)
    priya = employee("u001", "Priya Patel", "Finance", job_title="Finance Analyst", role=analyst, manager=mona_e)
    kees = employee("u002", "Kees Bakker", "Finance", job_title="Finance Admin", role=fin_admin, manager=mona_e)
    jan = employee("u003", "Jan de Vries", "Finance", job_title="Finance Analyst", role=analyst, manager=mona_e)
    sara = employee("u004", "Sara Lind", "IT", job_title="Engineer", manager=mark_e)
    DirectAuthorisation.objects.create(authorisation_id="A1", employee=priya, system=finance, access_level=write,
                                       valid_from=date(2024, 1, 1))
    DirectAuthorisation.objects.create(authorisation_id="A2", employee=priya, system=finance, access_level=admin,
                                       valid_from=date(2023, 1, 1), valid_to=date(2024, 12, 31),
                                       status=DirectAuthorisation.Status.REVOKED)
    DirectAuthorisation.objects.create(authorisation_id="A3", employee=sara, system=hr, access_level=admin,
                                       valid_from=date(2022, 1, 1))
    sick = SickLeave.objects.create(employee=kees, start_date=date(2025, 11, 9), end_date=date(2025, 11, 12))
    vacation = Vacation.objects.create(employee=kees, start_date=date(2025, 8, 1), end_date=date(2025, 8, 14))
    return SimpleNamespace(read=read, write=write, admin=admin, finance=finance, hr=hr, payroll=payroll,
                           analyst=analyst, fin_admin=fin_admin, mona=mona_e, mark=mark_e, priya=priya, kees=kees,
                           jan=jan, sara=sara, sick=sick, vacation=vacation, mona_user=mona, mark_user=mark)


@pytest.fixture
def submit(org, alice):
    """Submit a change (by default Priya's Admin-level change to Jan's FinanceApp access)."""
    from casework.access.services import mutation_submit

    def make(**overrides):
        data = {"actor": alice, "changed_by": org.priya, "changed_for": org.jan, "system": org.finance,
                "access_level": org.admin, "field_changed": "Access level", "old_value": "Read",
                "new_value": "Write", "changed_at": CHANGED_AT}
        data.update(overrides)
        mutation = mutation_submit(**data)
        mutation.refresh_from_db()
        return mutation

    return make


def employee_link(mutation) -> str:
    from casework.access.links import link_path

    request = InfoRequest.objects.get(mutation=mutation, kind=InfoRequest.Kind.EMPLOYEE, answered_at__isnull=True,
                                      cancelled_at__isnull=True)
    return link_path(request)


def token_of(path: str) -> str:
    return path.rstrip("/").split("/")[-1]


def manager_request(mutation) -> InfoRequest:
    return InfoRequest.objects.get(mutation=mutation, kind=InfoRequest.Kind.MANAGER)


def ask_employee(mutation, *, deliver: bool = True) -> InfoRequest:
    """From Clarification Requested: the employee's request written (Request queued) and, with
    `deliver`, its email sent as the worker sends it (its task runs on commit, which tests on a
    rolled-back transaction never reach): the mail server's acceptance is the fact that moves
    the change to Awaiting User Response (issue 43)."""
    from casework.access.services import request_send
    from casework.access.states import AccessStatus, mutation_transition
    from casework.cases.notifications.email import notification_email
    from casework.cases.notifications.models import Notification

    request, created = request_send(actor="system", mutation=mutation, kind=InfoRequest.Kind.EMPLOYEE,
                                    subject="Please explain", body="You changed Jan's access without the rights.")
    assert created
    mutation.refresh_from_db()
    if mutation.status == AccessStatus.CLARIFICATION_REQUESTED:  # not yet moved on by the email's outcome
        mutation_transition(actor="system", mutation=mutation, to=AccessStatus.USER_REQUEST_QUEUED, reason="test")
    if deliver:
        notification_email(Notification.objects.filter(target_id=request.pk, kind="request").latest("id").pk)
        mutation.refresh_from_db()
        assert mutation.status == AccessStatus.AWAITING_USER_RESPONSE
    return request


def _clarification_requested(submit):
    from casework.access.services import rights_check_record
    from casework.access.states import AccessStatus, mutation_transition

    mutation = submit(investigate=False)
    for status in (AccessStatus.INVESTIGATION_STARTED, AccessStatus.CLARIFICATION_REQUESTED):
        mutation_transition(actor="system", mutation=mutation, to=status, reason="test")
    rights_check_record(mutation=mutation, message="Priya did not hold Admin on FinanceApp.", result={
        "authorized": False, "held_level": "Write",
        "evidence": [{"source": "direct", "reference": "A1", "system": "FinanceApp", "level": "Write",
                      "covers": False, "note": "Write is below the required Admin"}]})
    return mutation


@pytest.fixture
def asked(submit):
    """A mutation whose employee has been sent a link, and its email accepted: the
    investigation's steps, by hand (no agent runs, so these tests need no transactional
    database)."""
    return ask_employee(_clarification_requested(submit))


@pytest.fixture
def asked_unsent(submit):
    """As `asked`, but the link's email not sent yet (Request queued)."""
    return ask_employee(_clarification_requested(submit), deliver=False)


@pytest.fixture
def awaiting_manager(org, asked):
    """The employee answered, the records confirmed it, and Mona has been asked."""
    from casework.access.links import link_token
    from casework.access.services import claim_record_validation, claim_submit, request_send
    from casework.access.states import AccessStatus, mutation_transition

    claim = claim_submit(token=link_token(asked), claim_type="sick_leave_cover", colleague=org.kees,
                         period_start=date(2025, 11, 9), period_end=date(2025, 11, 12),
                         explanation="Kees was ill and asked me to.")
    claim_record_validation(claim=claim, status="valid", result={
        "message": "Confirmed: Kees was on approved sick leave.",
        "checks": [{"check": "An approved sick leave covers 2025-11-10", "passed": True, "detail": "sick_leave:1"}]})
    mutation = asked.mutation
    mutation_transition(actor="system", mutation=mutation, to=AccessStatus.MANAGER_VERIFICATION_REQUESTED,
                        reason="test")
    request, _ = request_send(actor="system", mutation=mutation, kind=InfoRequest.Kind.MANAGER,
                              subject="Please validate", body="Priya says she covered Kees.")
    mutation_transition(actor="system", mutation=mutation, to=AccessStatus.AWAITING_MANAGER_RESPONSE, reason="test")
    return request
