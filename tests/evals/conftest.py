"""Evaluation helpers: scenarios run on the test database (transactional: the pipelines'
tools read it from pool threads), emptied before each scenario as the CLI's throwaway
database is."""

from __future__ import annotations

import pytest
from django.core.management import call_command


def flush() -> None:
    call_command("flush", interactive=False, verbosity=0)


@pytest.fixture
def eval_db(transactional_db):
    return flush
