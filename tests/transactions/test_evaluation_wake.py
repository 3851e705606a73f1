"""Evaluation wake-ups coalesced per process (casework/transactions/monitoring/wake.py): the
committing request never sends; one message carries what several commits stored."""

from __future__ import annotations

import threading

from casework.transactions.monitoring import wake


def test_commits_are_sent_later_in_one_message_and_never_from_the_request(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.TXN_EVALUATE_COALESCE_MS = 1000  # the thread waits a second; the test flushes first
    sent: list[list[int]] = []
    caller = threading.get_ident()
    in_request: list[int] = []

    def send(ids: list[int]) -> None:
        if threading.get_ident() == caller and not flushing.is_set():
            in_request.append(1)
        sent.append(list(ids))

    flushing = threading.Event()
    wake.evaluation_wake([1, 2], send=send, chunk=2)
    wake.evaluation_wake([3], send=send, chunk=2)
    assert in_request == [] and sent == []  # the requests returned without a broker round trip
    flushing.set()
    wake._coalescer.flush()
    assert sorted(i for batch in sent for i in batch) == [1, 2, 3]
    assert all(len(batch) <= 2 for batch in sent)  # at most `chunk` ids per message


def test_with_no_coalescing_each_commit_sends_at_once(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.TXN_EVALUATE_COALESCE_MS = 0
    sent: list[list[int]] = []
    wake.evaluation_wake([7], send=sent.append, chunk=1000)
    assert sent == [[7]]
