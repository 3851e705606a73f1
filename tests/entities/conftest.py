"""One account seen in three case types: a fraud alert (account, device, IP), a support
ticket from its customer naming the account and the IP, a transaction investigation on the
card account of the same id. Made through each type's own service; in a plain `db` test the
pipelines' on-commit tasks never start."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.fraud.conftest import CYCLING

ACCOUNT = "ACC-1043"
IP = "203.0.113.17"


@pytest.fixture
def alert(db):
    from casework.fraud.services import alert_create

    def make(account=ACCOUNT, devices=("DEV-RING-A1",), ips=(IP,)):
        return alert_create(actor="system", data={**CYCLING, "account_id": account, "device_ids": list(devices),
                                                   "ip_addresses": list(ips)})

    return make


@pytest.fixture
def ticket(db):
    from casework.support.services import customer_save, ticket_open

    def make(message=f"Someone logged into my account {ACCOUNT} from {IP} last night.",
             customer_id="CUST-9001", email="Dana.Doe@Example.com"):
        from casework.support.models import Customer

        customer = Customer.objects.filter(customer_id=customer_id).first() or customer_save(
            actor="system", data={"customer_id": customer_id, "name": "Dana Doe", "email": email, "plan": "pro"})
        return ticket_open(actor="system", customer=customer, message=message)

    return make


@pytest.fixture
def investigation(db):
    from casework.transactions.ingest import transactions_import
    from casework.transactions.services import investigation_start

    def make(account=ACCOUNT, transaction_id="TX-1043-00001", merchant="Quick Cash Ltd", device="DEV-RING-A1"):
        transactions_import(actor="system", via="test", rows=[{
            "transaction_id": transaction_id, "account_id": account, "card_last4": "4242", "amount": "950.00",
            "currency": "EUR", "merchant": merchant, "mcc": "6011", "country": "NL", "channel": "ecommerce",
            "device_id": device, "occurred_at": datetime(2026, 11, 20, 3, 14, tzinfo=UTC).isoformat(),
            "home_country": "NL"}])
        return investigation_start(actor="system", transaction_id=transaction_id)

    return make
