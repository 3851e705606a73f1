"""Listening to the shared case domain: the generic close (/cases/<ref>/close/, the API, the
bulk close) goes through the support ticket's own rules."""

from __future__ import annotations

import logging

from django.dispatch import receiver

from casework.cases.models import Case
from casework.cases.signals import case_closed, case_closing

logger = logging.getLogger(__name__)


@receiver(case_closing, sender=Case, dispatch_uid="support_case_closing")
def _on_case_closing(sender, case, outcome, actor, **kwargs):
    """A close as `replied` with no reply sent is refused (400 naming `outcome`)."""
    if case.case_type != "support_ticket":
        return
    from casework.support.services import support_case_closing

    support_case_closing(case=case, outcome=outcome)


@receiver(case_closed, sender=Case, dispatch_uid="support_case_closed")
def _on_case_closed(sender, case, decision, actor, **kwargs):
    """The ticket follows its closed case: closed without a reply unless one went out."""
    if case.case_type != "support_ticket":
        return
    from casework.support.services import support_case_closed

    try:
        support_case_closed(case=case, outcome=decision.outcome, reason=decision.reason, actor=actor)
    except Exception:  # noqa: BLE001 - the close has committed; the ticket's move is logged, not raised at the closer
        logger.exception("%s: the ticket did not follow its closed case", case.reference)
