"""A database restart costs a run latency, never the run (issue 26, point 1).

On PostgreSQL the restart is simulated the way a fast shutdown looks to a worker: from a
second connection, `pg_terminate_backend` ends every other backend of the test database in
the middle of a run step ("terminating connection due to administrator command"). The run
is retried and resumes from its last saved step: the step that was saved is not repeated,
the interrupted one is, and the run completes. On SQLite there is no server to terminate
backends on: those tests skip (CI runs them on PostgreSQL)."""

from __future__ import annotations

import psycopg
import pytest
from django.db import InterfaceError, OperationalError, connection
from pydantic import BaseModel, Field

from agents.llm.offline_registry import offline_analyst
from agents.models import AgentCall, AgentRun
from agents.runtime.agent import Agent
from agents.runtime.pipeline import CallSpec, Pipeline, RunContext, Stage, register_pipeline
from agents.tasks import pipeline_enqueue
from casework.cases.services import case_create
from casework.db_transient import backoff_seconds, is_transient_db_error
from tests.fakes.db_restart import on_postgres, terminate_other_backends

PIPELINE = "test_transient_db"
CALLS: list[str] = []
# What the second stage's agent does on its first call: "terminate" the worker's backends.
ON_FIRST_JUDGE_CALL: list[str] = []

class Note(BaseModel):
    summary: str = Field(description="What the agent saw.")


@offline_analyst("test_transient_reader")
def read_case(data: dict) -> dict:
    CALLS.append("reader")
    return {"summary": f"read {data['case']}"}


@offline_analyst("test_transient_judge")
def judge_case(data: dict) -> dict:
    CALLS.append("judge")
    if ON_FIRST_JUDGE_CALL and CALLS.count("judge") == 1:
        assert terminate_other_backends() >= 1
    return {"summary": f"judged {data['case']}"}


reader = Agent(id="test_transient_reader", system_prompt="Read the case.", output_model=Note)
judge = Agent(id="test_transient_judge", system_prompt="Judge the case.", output_model=Note)


def read(ctx: RunContext) -> list[CallSpec]:
    return [CallSpec("reader", reader, {"case": ctx.case.reference})]


def decide(ctx: RunContext) -> list[CallSpec]:
    return [CallSpec("judge", judge, {"case": ctx.case.reference})]


register_pipeline(Pipeline(name=PIPELINE, modes={"full": [Stage("read", read), Stage("judge", decide)]},
                           description="Two steps, so that the first is saved before the second is cut."))


@pytest.fixture(autouse=True)
def _fresh():
    CALLS.clear()
    ON_FIRST_JUDGE_CALL.clear()
    yield
    ON_FIRST_JUDGE_CALL.clear()


@on_postgres
@pytest.mark.django_db(transaction=True)  # the backends die: no test transaction could survive it
def test_a_run_whose_database_connection_is_terminated_mid_step_resumes_and_completes(alice):
    case = case_create(actor=alice, case_type="fraud_alert", title="Card testing on ACC-9")
    ON_FIRST_JUDGE_CALL.append("terminate")

    run = pipeline_enqueue(case=case, pipeline=PIPELINE, mode="full", actor="system")  # runs eagerly on commit

    run.refresh_from_db()
    assert run.status == AgentRun.Status.COMPLETED, run.error
    assert run.error == ""
    # The first step was saved before the backends died: not repeated. The second was cut
    # before its save: repeated once, and saved once.
    assert CALLS == ["reader", "judge", "judge"]
    assert sorted(AgentCall.objects.filter(run=run).values_list("key", flat=True)) == ["judge", "reader"]
    assert run.results["judge"]["output"] == {"summary": f"judged {case.reference}"}
    assert not AgentRun.objects.filter(status=AgentRun.Status.FAILED).exists()


@on_postgres
@pytest.mark.django_db(transaction=True)
def test_a_terminated_connection_raises_an_error_classified_as_transient():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    terminate_other_backends()
    with pytest.raises((OperationalError, InterfaceError)) as caught:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    assert is_transient_db_error(caught.value), repr(caught.value)
    connection.close()  # the next query opens a fresh connection
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


@pytest.mark.parametrize("message", [
    "terminating connection due to administrator command",
    "server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally",
    "the connection is closed",
    "the database system is shutting down",
    "the database system is starting up",
    'connection failed: connection to server at "127.0.0.1", port 5432 failed: Connection refused',
])
def test_connection_level_errors_are_transient(message):
    assert is_transient_db_error(OperationalError(message))


def test_sqlstates_of_serialization_failures_and_deadlocks_are_transient():
    for code in ("40001", "40P01", "57P01", "57P03", "08006"):
        error = psycopg.errors.lookup(code)("boom")
        wrapped = OperationalError("boom")
        wrapped.__cause__ = error
        assert is_transient_db_error(wrapped), code


def test_errors_a_retry_cannot_fix_are_not_transient():
    from django.db import IntegrityError, ProgrammingError

    assert not is_transient_db_error(IntegrityError('duplicate key value violates unique constraint "x"'))
    assert not is_transient_db_error(ProgrammingError('relation "nope" does not exist'))
    assert not is_transient_db_error(OperationalError("canceling statement due to statement timeout")
                                     .with_traceback(None))
    assert not is_transient_db_error(ValueError("the connection is closed"))


def test_backoff_grows_and_is_capped():
    class NoJitter:
        @staticmethod
        def random() -> float:
            return 0.0

    assert [backoff_seconds(n, rng=NoJitter) for n in range(8)] == [0.5, 1, 2, 4, 8, 16, 30, 30]
