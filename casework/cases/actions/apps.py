from __future__ import annotations

from django.apps import AppConfig


class CaseActionsConfig(AppConfig):
    """Actions: what a case's decision asked another system to do, and how far it got. The
    Action rows stay in the outbox's tables (outbox.Action: no data moved); what reads and
    moves them lives here, beside the case, since an action is a state of the case."""

    name = "casework.cases.actions"
    label = "case_actions"
    verbose_name = "Actions"
