"""Budgets on, a price for the fake endpoint's model, and a lead of the team owning every type.

The reservation runs on the runtime's budget pool, whose threads have connections of their
own: the tests that charge are transactional (a thread cannot see a test's uncommitted rows),
and the pool's connections are closed after each test."""

from __future__ import annotations

import pytest

from agents.llm.registry import reset_provider
from agents.runtime import charging
from tests.fakes.fixtures import fake_openai  # noqa: F401 - fixture

# US$ per million tokens: one input token is 1 µ$, one output token 2 µ$.
FAKE_PRICE = {"openai": {"fake-model": [1.0, 2.0]}, "offline": {"offline-rules-v1": [1.0, 2.0]}}


@pytest.fixture
def budgets_on(settings):
    settings.CASE_BUDGETS_ENABLED = True
    settings.LLM_PRICES = FAKE_PRICE
    charging.pool_shutdown()
    reset_provider()
    yield settings
    charging.pool_shutdown()
    reset_provider()


@pytest.fixture
def lena(transactional_db):
    """A lead of a team owning every case type."""
    from casework.cases.types import CASE_TYPES
    from casework.people.roles import INVESTIGATOR
    from casework.people.services import user_create
    from casework.people.teams import team_create, team_member_set

    user = user_create(actor="system", username="lena", password="lena-pass-123", role=INVESTIGATOR)
    team = team_create(actor="system", name="Every case type (test fixture)", case_types=list(CASE_TYPES))
    team_member_set(actor="system", team=team, user=user, role="lead")
    return user
