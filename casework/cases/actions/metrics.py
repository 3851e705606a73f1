"""Prometheus gauges of actions, read from the database at scrape time (registered with
casework.ops.metrics from CaseActionsConfig.ready): how many in each state, and how many are
overdue."""

from __future__ import annotations

from prometheus_client.core import GaugeMetricFamily


def action_metric_families() -> list[GaugeMetricFamily]:
    from django.db.models import Count
    from django.utils import timezone

    from casework.cases.actions.services import action_overdue_q
    from casework.outbox.models import Action

    actions = GaugeMetricFamily("casework_actions", "Actions decisions asked of other systems, by state.",
                                labels=["state"])
    counts = dict(Action.objects.order_by().values_list("state").annotate(n=Count("id")))
    for state in Action.State.values:
        actions.add_metric([state], counts.get(state, 0))
    overdue = GaugeMetricFamily("casework_actions_overdue",
                                "Actions requested or delivered, not confirmed by their deadline.",
                                value=Action.objects.filter(action_overdue_q(timezone.now())).count())
    return [actions, overdue]
