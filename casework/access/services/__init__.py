"""Every write to an access change goes through these functions; each is audited in its
transaction, and side effects (starting the next pipeline step, sending email) happen on
commit. Status moves go through casework.access.states.mutation_transition only.

    submission.py      a change arrives: validated, its case opened, the investigation enqueued
    agent_results.py   rights checks, advisory reports, claim validations the agents hand back
    messages.py        agent-to-agent messages (request and reply)
    notifications.py   the access flow's notifications (the shared casework.cases.notifications), who to notify
    requests.py        requests to the employee and the manager: send, resend, withdraw
    answers.py         the employee's claim and the manager's verdict
    decisions.py       the investigator's decision; a closed case stops the flow
"""

from __future__ import annotations

from casework.access.services.agent_results import claim_record_validation, report_record, rights_check_record
from casework.access.services.answers import LinkRefused, claim_submit, verdict_submit
from casework.access.services.decisions import mutation_after_case_closed, mutation_decide
from casework.access.services.messages import message_reply, message_send, new_correlation_id
from casework.access.services.notifications import (
    investigators_to_notify,
    notification_mark_read,
    notification_send,
    notifications_mark_all_read,
    notify_answer,
)
from casework.access.services.requests import (
    _notify_request,
    request_link_thread,
    request_resend,
    request_send,
    request_url,
    requests_cancel_open,
)
from casework.access.services.submission import FUTURE_SKEW, PIPELINE, mutation_submit

__all__ = [
    "FUTURE_SKEW", "PIPELINE", "LinkRefused", "_notify_request", "claim_record_validation", "claim_submit",
    "investigators_to_notify", "message_reply", "message_send", "mutation_after_case_closed", "mutation_decide",
    "mutation_submit", "new_correlation_id", "notification_mark_read", "notification_send",
    "notifications_mark_all_read", "notify_answer", "report_record", "request_link_thread", "request_resend", "request_send",
    "request_url", "requests_cancel_open", "rights_check_record", "verdict_submit",
]
