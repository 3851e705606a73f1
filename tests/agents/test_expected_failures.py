"""A failure a pipeline raises on purpose (the demo's injected failures) fails the run like any
other, named on the run, but the worker logs one line for it instead of a traceback."""

from __future__ import annotations

import logging

import pytest

from agents.models import AgentRun
from agents.runtime.pipeline import Pipeline, RunContext, Stage, execute_run, register_pipeline
from agents.tasks import pipeline_enqueue
from casework.cases.services import case_create
from casework.transactions.chaos import InjectedFailure

pytestmark = pytest.mark.django_db


class Unexpected(RuntimeError):
    pass


RAISES: list[type[Exception]] = []


def _raise(ctx: RunContext):
    raise RAISES[0]("the step broke")


register_pipeline(Pipeline(name="test_expected_failures", modes={"full": [Stage("break", _raise)]},
                           description="Fails in its first step."))


@pytest.mark.parametrize(("error", "traceback_logged"), [(InjectedFailure, False), (Unexpected, True)])
def test_only_an_unexpected_failure_logs_a_traceback(alice, caplog, error, traceback_logged):
    case = case_create(actor=alice, case_type="fraud_alert", title="Breaks on purpose")
    run = pipeline_enqueue(case=case, pipeline="test_expected_failures", mode="full")
    RAISES[:] = [error]
    with caplog.at_level(logging.WARNING, logger="agents.runtime.pipeline"):
        execute_run(run.pk)

    run.refresh_from_db()
    assert run.status == AgentRun.Status.FAILED and f"{error.__name__}: the step broke" in run.error
    (record,) = [r for r in caplog.records if f"Run {run.pk} failed" in r.getMessage()]
    assert (record.exc_info is not None) is traceback_logged
