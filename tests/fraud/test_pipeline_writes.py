"""What one fraud alert costs the database: the run's SQL statements and write transactions,
counted (a count is deterministic; a time is not). Per stage, not per call: a stage's
AgentCall rows, its audit entries and the run's state go in one transaction."""

from __future__ import annotations

import re

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from agents.models import AgentCall, AgentRun
from agents.tasks import run_pipeline
from casework.cases.models import Case
from casework.fraud.models import Alert
from casework.fraud.states import AlertStatus

pytestmark = pytest.mark.django_db(transaction=True)

WRITE = re.compile(r"^\s*(INSERT|UPDATE|DELETE)\b", re.IGNORECASE)


class WriteTransactions:
    """Counts committed transactions that wrote: each outermost atomic block that ran a write,
    and each write run outside any (autocommit: a transaction of its own)."""

    def __init__(self):
        self.count = 0
        self._open_block_wrote = False

    def __call__(self, execute, sql, params, many, context):
        if WRITE.match(sql):
            if connection.in_atomic_block:
                self._open_block_wrote = True
            else:
                self.count += 1
        return execute(sql, params, many, context)

    def on_commit_of_block(self):
        if self._open_block_wrote:
            self.count += 1
        self._open_block_wrote = False


def test_one_alert_takes_at_most_25_statements_in_4_write_transactions(monkeypatch, settings):
    # In production the audit sequencer batches on its own thread and connection (Trillian's
    # sequencer beside the log's writers); the writer's cost is what is counted here.
    settings.AUDIT_SEQUENCER = "off"
    from casework.fraud.services import alert_create
    from tests.fraud.conftest import CYCLING

    held: list[int] = []
    monkeypatch.setattr(run_pipeline, "delay", held.append)  # the worker's part is measured alone
    with CaptureQueriesContext(connection) as intake, transaction.atomic():
        alert = alert_create(actor="system", data=CYCLING)
    (run_id,) = held
    # Intake (account, reference, case, alert, run, three audit entries, and the entities the
    # alert names: its account's links read, new entities inserted, their ids, mentions
    # inserted; casework.entities) is one transaction.
    assert len(_statements(intake)) <= 19

    counter = WriteTransactions()
    original_commit = connection.commit

    def commit():
        counter.on_commit_of_block()
        return original_commit()

    monkeypatch.setattr(connection, "commit", commit)
    with CaptureQueriesContext(connection) as queries, connection.execute_wrapper(counter):
        run_pipeline(run_id)

    run = AgentRun.objects.get(pk=run_id)
    assert run.status == AgentRun.Status.COMPLETED, run.error
    assert AgentCall.objects.filter(run=run, kind="agent").count() == 6
    # The run: claim; load; similar-case search; per stage one INSERT of calls, one of audit
    # entries, one UPDATE of the run; the assessment written back and the run ended together.
    # (15 and 3 now: the last stage, the write-back and the run's end share one transaction;
    # 17 and 4 when this was written, from 101 statements in 8 transactions before.) The run's
    # end also writes its run.completed event and reads the endpoints subscribed to it (the
    # outbox, casework/outbox): two statements, in the same transaction. The network
    # specialist's input reads confirmed fraud sharing an entity with the alert (casework.entities):
    # one more; the look-alikes read the decided alerts people linked to it: one more. Each of
    # the alert's two lifecycle moves (assessing, assessed) locks the alert and its case in one
    # SELECT and inserts its two audit entries (the alert's move, the case's status) in one
    # INSERT: 25, was 29.
    statements = _statements(queries)
    assert len(statements) <= 25, "\n".join(sql[:120] for sql in statements)
    assert counter.count <= 4
    # The assessment was written back (in those transactions): before it, the alert was being
    # assessed and its case in progress.
    alert = Alert.objects.select_related("case").get(pk=alert.pk)
    assert alert.status == AlertStatus.ASSESSED
    assert alert.case.status == Case.Status.AWAITING_DECISION


def _statements(captured: CaptureQueriesContext) -> list[str]:
    """SQL statements, without transaction control (BEGIN, COMMIT, savepoints)."""
    control = ("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT", "BEGIN", "COMMIT")
    return [q["sql"] for q in captured.captured_queries if not q["sql"].upper().startswith(control)]
