"""Transaction investigations: a card with history and one planted scenario per test."""

from __future__ import annotations

import pytest
from django.db import transaction

from casework.transactions.demo_data import card_history, planted
from casework.transactions.ingest import transactions_import
from casework.transactions.services import investigation_start
from tests.fakes.fixtures import fake_openai  # noqa: F401 - fixture


def load(kind: str, account: str = "CARD-7001", *, days: int = 30, per_day: float = 2.0) -> str:
    """Import a card's history and a scenario; returns the investigated transaction's id."""
    history = card_history(account, days=days, per_day=per_day) if days else []
    rows = planted(kind, account, history) if history else [
        {**row, "home_country": "NL"} for row in planted(kind, account, [])]
    transactions_import(actor="system", rows=history + rows, via="test")
    return rows[-1]["transaction_id"]


def investigate(transaction_id: str, **state):
    """Start an investigation and run it to the end: the tests are transactional (the tools
    read the database from pool threads, which see only committed rows), so the run starts
    at the commit, and Celery is eager."""
    with transaction.atomic():
        investigation = investigation_start(actor="system", transaction_id=transaction_id, initial_state=state)
    investigation.refresh_from_db()
    return investigation


@pytest.fixture
def run_investigation(transactional_db):
    return investigate
