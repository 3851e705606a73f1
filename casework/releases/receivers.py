"""The release listening to the shared case: a close from anywhere (the generic close, a bulk
close) makes the release decided, on the word of the person who closed it."""

from __future__ import annotations

from django.db import transaction
from django.dispatch import receiver

from casework.cases.signals import case_closed


@receiver(case_closed, dispatch_uid="releases_decided_on_close")
def _release_decided_on_close(sender, case, decision, actor, **kwargs) -> None:
    if case.case_type != "release_risk":
        return
    from casework.releases.models import Release
    from casework.releases.services import release_decided

    release = Release.objects.select_related("case").filter(case=case).first()
    if release is not None:
        with transaction.atomic():
            release_decided(actor=decision.decided_by or actor, release=release,
                            outcome_label=decision.outcome_label, reason=decision.reason)
