"""The queue at 100,000 cases (issue 16). Run by hand:

    .venv/bin/python bench/queue_100k.py [--database-url URL] [--cases 100000] [--repeats 20]
        [--write-readme]

Needs PostgreSQL (default postgres://postgres@127.0.0.1:5432/casework_queue_bench; the name
must contain "bench"). The database is migrated; cases are loaded with bulk_create once and
kept for the next run. Each kind of request (the queue page, its htmx fragment and
GET /api/cases/: first page, page 50, each filter, a search, a pasted reference, each sort)
is sent --repeats times in-process through Django's test client (no network, no gunicorn)
as an investigator; the table gives p50/p95 in ms and the SQL queries per request.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from readme_block import write_block  # bench/ is on sys.path when run as a script

REPO = Path(__file__).resolve().parents[1]
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/casework_queue_bench"


def setup(url: str) -> None:
    if "bench" not in url.rsplit("/", 1)[-1]:
        raise SystemExit("The benchmark's database name must contain 'bench'.")
    os.environ.update(DATABASE_URL=url, DEBUG="false", SECRET_KEY="bench-only", AUDIT_SEQUENCER="inline",
                      VAR_DIR=str(REPO / "var" / "bench"), ALLOWED_HOSTS="testserver")
    sys.path.insert(0, str(REPO))
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "casework.settings")
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def load(n: int) -> None:
    import random
    from datetime import timedelta

    from django.contrib.auth.models import User
    from django.utils import timezone

    from casework.cases.models import Case
    from casework.people.roles import INVESTIGATOR
    from casework.people.services import user_create

    if not User.objects.filter(username="bench").exists():
        user_create(actor="system", username="bench", password="bench-pass-123", role=INVESTIGATOR)
    have = Case.objects.count()
    rng = random.Random(16)
    bench = User.objects.get(username="bench")
    words = "deposit cycling refund payroll access login device ring mule chargeback release payment".split()
    types = {"fraud_alert": "FRA", "support_ticket": "SUP", "access_change": "ACC",
             "transaction_investigation": "TXN", "release_risk": "REL"}
    now = timezone.now()
    batch = []
    for i in range(have, n):
        case_type = rng.choice(list(types))
        batch.append(Case(
            reference=f"B{types[case_type]}-{i:07d}", case_type=case_type,
            title=" ".join(rng.sample(words, 3)) + f" {i}",
            status=rng.choice(["new", "in_progress", "awaiting_response", "awaiting_decision", "resolved", "closed"]),
            priority=rng.choice(["critical", "high", "medium", "low"]),
            assignee=bench if rng.random() < 0.1 else None,
        ))
        if len(batch) == 5000:
            Case.objects.bulk_create(batch)
            batch = []
    Case.objects.bulk_create(batch)
    if Case.objects.filter(created_at__lt=now - timedelta(days=1)).exists():
        return
    # Spread created_at over a year (auto_now_add set them all to now), in id order.
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("UPDATE cases_case SET created_at = %s - (id * interval '5 minutes'), "
                       "updated_at = %s - ((id %% 977) * interval '1 hour')", [now, now])
        cursor.execute("ANALYZE cases_case")


KINDS = [
    ("first page", {}),
    ("page 50", {"page": 50}),
    ("status=new", {"status": "new"}),
    ("priority=critical", {"priority": "critical"}),
    ("case_type=support_ticket", {"case_type": "support_ticket"}),
    ("assignee=bench", {"assignee": "bench"}),
    ("assignee=none", {"assignee": "none"}),
    ("search q=refund pay", {"q": "refund pay"}),
    ("search q=0012345 (reference part)", {"q": "0012345"}),
    ("search pasted reference", {"q": "BFRA-0054321"}),
    *[(f"sort {o}", {"ordering": o}) for o in ("priority", "-priority", "created", "updated", "-updated",
                                               "reference", "status")],
    ("sort priority, page 50", {"ordering": "priority", "page": 50}),
]


def measure(repeats: int) -> list[tuple[str, str, float, float, int]]:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.login(username="bench", password="bench-pass-123")
    rows = []
    targets = [("page", "/cases/", {}), ("htmx", "/cases/", {"HTTP_HX_REQUEST": "true",
                                                              "HTTP_HX_TARGET": "queue-results"}),
               ("api", "/api/cases/", {})]
    for label, params in KINDS:
        for target, url, headers in targets:
            client.get(url, params, **headers)  # warm-up: template loading, first connection
            times = []
            for _ in range(repeats):
                with CaptureQueriesContext(connection) as queries:
                    start = time.perf_counter()
                    response = client.get(url, params, **headers)
                    times.append((time.perf_counter() - start) * 1000)
                assert response.status_code == 200, (label, target, response.status_code)
            times.sort()
            p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
            rows.append((label, target, statistics.median(times), p95, len(queries)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    setup(args.database_url)
    load(args.cases)
    rows = measure(args.repeats)
    lines = [f"{args.cases:,} cases, {args.repeats} requests per row, {platform.machine()} "
             f"{os.cpu_count()} cores, PostgreSQL, Django test client in-process.", "",
             "| request | target | p50 ms | p95 ms | queries |", "|---|---|---:|---:|---:|"]
    lines += [f"| {label} | {target} | {p50:.1f} | {p95:.1f} | {q} |" for label, target, p50, p95, q in rows]
    worst = max(r[3] for r in rows)
    lines += ["", f"Worst p95: {worst:.1f} ms (target: at or under 100 ms)."]
    text = "\n".join(lines)
    print(text)
    if args.write_readme:
        write_block("queue_100k", text)


if __name__ == "__main__":
    main()
