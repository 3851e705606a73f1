"""What an access change adds to a manager's dashboard (casework.cases.dashboard), registered on
its CaseType (casework.cases.types.case_type_register_panel): the validation requests waiting
for the manager, oldest first, with their age."""

from __future__ import annotations

from django.utils import timezone

from casework.cases.types import Panel


def manager_validation_requests(user) -> list[dict]:
    from casework.access.models import InfoRequest

    now = timezone.now()
    requests = (InfoRequest.objects.filter(kind=InfoRequest.Kind.MANAGER, recipient__user=user,
                                           answered_at__isnull=True, cancelled_at__isnull=True)
                .select_related("mutation__case", "mutation__changed_by", "mutation__system").order_by("sent_at", "id"))
    return [{"request": r, "age_hours": (now - r.sent_at).total_seconds() / 3600} for r in requests[:50]]


PANEL = Panel("manager-requests", "Validation requests waiting for you", "access/_dashboard_requests.html",
              manager_validation_requests)
