"""One customer in three case types, made through the real entry points, for the erasure tests:
a fraud alert on their account (its pipeline run, decided as fraud with a reason naming them),
a support ticket opened by an inbound e-mail with an attachment (posted as raw MIME to the
inbound endpoint, intake and triage run), and a transaction investigation on their card (its
planner run). Celery is eager and the tests transactional, so every pipeline has run (offline
provider) when `customer_everywhere` returns."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path

from django.test import Client

from casework.cases.models import Case
from casework.cases.services import case_close
from casework.entities.models import Entity
from casework.support.models import InboundEmail
from casework.support.services import customer_save
from casework.transactions.demo_data import card_history, planted
from casework.transactions.ingest import transactions_import
from tests.fraud.conftest import alert_data
from tests.transactions.conftest import investigate

AUTH = "inbound:erasure-test"


def basic() -> dict:
    return {"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(AUTH.encode()).decode()}


# A card number that passes the Luhn check, as a customer would write it.
PAN = "4539 1488 0343 6467"


@dataclass
class Person:
    customer_id: str
    name: str
    email: str
    account_id: str

    @property
    def identifiers(self) -> list[str]:
        """What must be gone from the dump and from var/: name, e-mail, account and customer id, card."""
        return [self.name, self.email, self.account_id, self.customer_id, PAN, PAN.replace(" ", "")]


ZENOBIA = Person("CUST-7042", "Zenobia Quillfeather", "zenobia.quillfeather@example.org", "ACC-704291")
OSWIN = Person("CUST-7043", "Oswin Threadgill", "oswin.threadgill@example.org", "ACC-704392")


def inbound_settings(settings) -> None:
    settings.ANYMAIL = {"WEBHOOK_SECRET": [AUTH], "AMAZON_SES_AUTO_CONFIRM_SNS_SUBSCRIPTIONS": False}
    settings.SUPPORT_EMAIL_FROM = "Support <support@casework.test>"
    settings.EMAIL_MESSAGE_ID_DOMAIN = "casework.test"


def _mime(person: Person) -> bytes:
    message = EmailMessage()
    message["From"] = f"{person.name} <{person.email}>"
    message["To"], message["Subject"] = "support@casework.test", f"Refund for {person.name}"
    message["Message-ID"] = f"<{person.customer_id.lower()}.1@mail.example.org>"
    message.set_content(f"Hello, this is {person.name}. Someone used my account {person.account_id} and "
                        f"my card {PAN} twice for invoice 1234, please refund.\n\n-- \n{person.name}\n{person.email}")
    message.add_attachment(f"Statement of {person.name}, account {person.account_id}, card {PAN}\n".encode(),
                           maintype="text", subtype="plain", filename="statement.txt")
    return message.as_bytes()


def customer_everywhere(person: Person, *, investigator) -> dict[str, Case]:
    """The person's three cases (see the module docstring), by type."""
    customer_save(actor="system", data={"customer_id": person.customer_id, "name": person.name,
                                        "email": person.email, "plan": "pro"})
    response = Client().post("/support/inbound/raw/", _mime(person), content_type="message/rfc822", **basic())
    assert response.status_code == 200, response.content
    ticket = InboundEmail.objects.get(from_email=person.email).ticket
    assert ticket is not None and ticket.case.attachments.exists()

    from casework.fraud.services import alert_create

    alert = alert_create(actor="system", data=alert_data(account_id=person.account_id))
    case_close(actor=investigator, case=Case.objects.get(pk=alert.case_id), outcome="confirmed_fraud",
               reason=f"Confirmed with {person.name} ({person.email}) by phone: not their payments.")

    history = [{**row, "holder_name": person.name} for row in card_history(person.account_id, days=10)]
    rows = planted("card_testing", person.account_id, history)
    transactions_import(actor="system", rows=history + [{**r, "holder_name": person.name} for r in rows], via="test")
    investigation = investigate(rows[-1]["transaction_id"])
    return {"support_ticket": ticket.case, "fraud_alert": Case.objects.get(pk=alert.case_id),
            "transaction_investigation": investigation.case}


def entities_of(person: Person) -> list[Entity]:
    """The entities a request names: the customer and the account (the e-mail and the card are
    found from them)."""
    return [Entity.objects.get(kind="customer", value=person.customer_id),
            Entity.objects.get(kind="account", value=person.account_id)]


def trace_quote(case: Case, text: str) -> Path:
    """A span in the trace of the case's first agent run whose exception message quotes `text`
    (what a failed tool call records), written by the real trace file exporter; its file."""
    import secrets

    from django.conf import settings
    from opentelemetry import trace

    from agents.models import AgentRun
    from audit.tracing import flush_trace_files, get_tracer

    run = AgentRun.objects.filter(case=case).exclude(trace_id="").order_by("pk").first()
    parent = trace.NonRecordingSpan(trace.SpanContext(
        trace_id=int(run.trace_id, 16), span_id=int(secrets.token_hex(8), 16), is_remote=True,
        trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED)))
    with get_tracer().start_as_current_span("tool.lookup_customer", context=trace.set_span_in_context(parent)) as span:
        span.set_attribute("exception.message", f"No open invoice for {text}")
    flush_trace_files()
    return Path(settings.TRACE_DIR) / f"{run.trace_id}.jsonl"
