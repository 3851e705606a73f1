"""Evaluation helpers: scenarios run on the test database (transactional: the pipelines'
tools read it from pool threads), emptied before each scenario as the CLI's throwaway
database is."""

from __future__ import annotations

import pytest

from agents.evals.isolation import empty_tables


def flush() -> None:
    empty_tables()


@pytest.fixture
def eval_db(transactional_db):
    return flush
