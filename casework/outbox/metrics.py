"""Prometheus metrics of outgoing webhooks. Counters count in the process that delivered;
the pending deliveries and the oldest one's age are read from the database at scrape time
(outbox_metric_families, registered with casework.ops.metrics from OutboxConfig.ready)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram
from prometheus_client.core import GaugeMetricFamily

# outcome: delivered, retrying (an attempt failed, another is scheduled), dead (the last
# attempt failed), gone (the receiver answered 410: the endpoint is disabled).
DELIVERIES = Counter("casework_webhook_deliveries_total", "Webhook delivery attempts, by outcome.", ["outcome"])
# reason: http_4xx, http_5xx, http_3xx (no redirect is followed), network (no HTTP answer), refused (SSRF guard).
FAILURES = Counter("casework_webhook_delivery_failures_total", "Failed webhook attempts, by reason.", ["reason"])
LATENCY = Histogram("casework_webhook_delivery_duration_seconds", "Time for one webhook request.",
                    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30))

OLDEST_HELP = ("Age of the oldest webhook delivery not yet delivered nor dead (0 when none is). "
               "Retries wait by design (up to 10 h between attempts); a fresh pending one past "
               "WEBHOOK_REDELIVER_AFTER_SECONDS means no worker is delivering.")


def failure_reason(status: int | None, error: str) -> str:
    if status is None:
        return "refused" if error.startswith("Refused") else "network"
    return f"http_{status // 100}xx"


def outbox_metric_families() -> list[GaugeMetricFamily]:
    from django.db.models import Count, Min
    from django.utils import timezone

    from casework.outbox.models import Delivery

    waiting = [Delivery.State.PENDING, Delivery.State.RETRYING, Delivery.State.DELIVERING]
    by_state = GaugeMetricFamily("casework_webhook_deliveries", "Webhook deliveries by state.", labels=["state"])
    counts = dict(Delivery.objects.order_by().values_list("state").annotate(n=Count("id")))
    for state in Delivery.State.values:
        by_state.add_metric([state], counts.get(state, 0))
    oldest = Delivery.objects.filter(state__in=waiting).aggregate(t=Min("created_at"))["t"]
    age = GaugeMetricFamily("casework_webhook_pending_oldest_seconds", OLDEST_HELP,
                            value=max(0.0, (timezone.now() - oldest).total_seconds()) if oldest else 0.0)
    return [by_state, age]
