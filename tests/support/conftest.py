"""Support test helpers: customers on each plan, a small knowledge base, and messages sent
through the service (Celery is eager, so the intake and triage runs have finished when
`send` returns)."""

from __future__ import annotations

import pytest

from agents.models import AgentRun

CUSTOMERS = [
    {"customer_id": "CUST-001", "name": "Ana Enterprise", "plan": "enterprise", "tenure_months": 24, "seats": 50,
     "region": "us-west"},
    {"customer_id": "CUST-002", "name": "Piet Pro", "plan": "pro", "tenure_months": 8, "seats": 5,
     "region": "eu-west"},
    {"customer_id": "CUST-003", "name": "Fran Free", "plan": "free", "tenure_months": 2, "seats": 1,
     "region": "eu-south"},
    {"customer_id": "CUST-004", "name": "Vera Vip", "plan": "pro", "tenure_months": 60, "seats": 20,
     "region": "ap-south", "vip": True},
]

ARTICLES = [
    {"article_id": "kb_001", "category": "billing", "title": "Resolving double charges",
     "body": "If you were charged twice for the same invoice, the duplicate charge is refunded automatically "
             "within 5 business days. Check your billing history for the refund."},
    {"article_id": "kb_002", "category": "billing", "title": "How to download an invoice",
     "body": "Open Settings, then Billing, then Invoices, and click Download next to the invoice you need. "
             "Invoices are PDF files."},
    {"article_id": "kb_003", "category": "billing", "title": "Refund policy",
     "body": "Refunds are available within 30 days of payment for annual plans."},
    {"article_id": "kb_010", "category": "technical", "title": "Troubleshooting login problems",
     "body": "If you cannot log in, reset your password from the login page and clear your browser cache. "
             "Error codes are explained in the status page."},
    {"article_id": "kb_011", "category": "technical", "title": "Service status and outages",
     "body": "During an outage, follow the status page. Data is replicated; an incident report follows."},
    {"article_id": "kb_020", "category": "general", "title": "How to change your profile name",
     "body": "Go to Settings, Profile, and edit your display name. Changes apply immediately."},
]


@pytest.fixture
def support_data(db):
    from casework.support.services import customer_save, kb_article_save

    customers = {c["customer_id"]: customer_save(actor="system", data=c) for c in CUSTOMERS}
    for article in ARTICLES:
        kb_article_save(actor="system", data=article)
    return customers


def with_address(customer_id: str, email: str = "") -> None:
    """Give a customer an email address: a reply reaches them (the test email backend accepts
    it when the reply commits), so it can be "sent" and the case "replied"."""
    from casework.support.services import customer_save

    customer_save(actor="system", data={"customer_id": customer_id,
                                        "email": email or f"{customer_id.lower()}@example.net"})


def send(actor, customer_id: str, message: str, channel: str = "api"):
    """Send a message; returns (intake run, ticket), both re-read."""
    from casework.support.models import Ticket
    from casework.support.services import message_receive

    run = message_receive(actor=actor, customer_id=customer_id, message=message, channel=channel)
    run = AgentRun.objects.get(pk=run.pk)
    ticket = Ticket.objects.select_related("case", "customer").get(case=run.case) if run.case_id else None
    return run, ticket


def triage_run(ticket) -> AgentRun:
    return AgentRun.objects.filter(case=ticket.case, mode="triage").latest("id")


@pytest.fixture
def smtp_server(settings):
    """Django's SMTP backend pointed at a real aiosmtpd server on 127.0.0.1 (tests/support/smtp.py)."""
    from tests.support.smtp import SmtpServer

    server = SmtpServer()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.SUPPORT_EMAIL_FROM = "Support <support@casework.test>"
    settings.EMAIL_MESSAGE_ID_DOMAIN = "casework.test"
    yield server
    server.close()
