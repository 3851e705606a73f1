"""The queue at 10,000 to 1,000,000 cases (issues 16 and 29). Run by hand:

    .venv/bin/python bench/queue_100k.py [--sizes 10000,100000,1000000] [--repeats 20]
        [--database-url URL] [--cache-url URL] [--write-readme]

Needs PostgreSQL (default postgres://postgres@127.0.0.1:5432/casework_queue_bench; the name
must contain "bench") and, for the navigation's cache, Redis (default
redis://127.0.0.1:6379/5, or QUEUE_BENCH_CACHE; keys prefixed with the database's name).
Each size has its own database, `<name>_10k`, `<name>_100k`, `<name>_1m`, created when
missing, migrated, loaded once with bulk_create (the time is printed) and kept for the next
run. Each size runs in a subprocess of its own. Each kind of request (the queue page, its
htmx fragment and GET /api/cases/: first page, page 50, each filter, a search, a pasted
reference, each sort, and the first page with the navigation's cache entry just invalidated)
is sent --repeats times in-process through Django's test client (no network, no gunicorn)
as each of --people: "admin" (sees every case: the rule adds nothing) and "fraud" (an
investigator in a team owning fraud alerts and transaction investigations, two of the five
types, named on some of the restricted cases: the need-to-know rule on every query). One case
in 1,000 is restricted. The table gives p50 / p95 in ms and the SQL queries per request for
each size and person.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from readme_block import write_block  # bench/ is on sys.path when run as a script

REPO = Path(__file__).resolve().parents[1]
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/casework_queue_bench"
DEFAULT_CACHE = os.environ.get("QUEUE_BENCH_CACHE", "redis://127.0.0.1:6379/5")


def size_label(n: int) -> str:
    return f"{n // 1_000_000}m" if n % 1_000_000 == 0 else f"{n // 1000}k" if n % 1000 == 0 else str(n)


def database_create(url: str) -> None:
    import psycopg

    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def setup(url: str, cache_url: str) -> None:
    name = url.rsplit("/", 1)[-1]
    if "bench" not in name:
        raise SystemExit("The benchmark's database name must contain 'bench'.")
    database_create(url)
    os.environ.update(DATABASE_URL=url, DEBUG="false", SECRET_KEY="bench-only", AUDIT_SEQUENCER="inline",
                      VAR_DIR=str(REPO / "var" / "bench"), ALLOWED_HOSTS="testserver", CACHE_URL=cache_url)
    sys.path.insert(0, str(REPO))
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "casework.settings")
    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    # One cache, several databases: each size's entries apart (user ids repeat across them).
    for alias in settings.CACHES:
        settings.CACHES[alias]["KEY_PREFIX"] = name
    call_command("migrate", verbosity=0)


def load(n: int) -> None:
    import random
    from datetime import timedelta

    from django.contrib.auth.models import User
    from django.utils import timezone

    from casework.cases.models import Case, CaseRestriction
    from casework.people.roles import ADMIN, INVESTIGATOR
    from casework.people.services import user_create
    from casework.people.teams import team_create, team_member_set

    if not User.objects.filter(username="bench").exists():
        user_create(actor="system", username="bench", password="bench-pass-123", role=INVESTIGATOR)
    if not User.objects.filter(username="bench-admin").exists():
        user_create(actor="system", username="bench-admin", password="bench-pass-123", role=ADMIN)
    team = team_create(actor="system", name="Bench fraud and transactions",
                       case_types=["fraud_alert", "transaction_investigation"])
    team_member_set(actor="system", team=team, user=User.objects.get(username="bench"))
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
    from django.db import connection

    changed = have < n
    if not Case.objects.filter(created_at__lt=now - timedelta(days=1)).exists():
        # Spread created_at over the past (auto_now_add set them all to now), in id order.
        with connection.cursor() as cursor:
            cursor.execute("UPDATE cases_case SET created_at = %s - (id * interval '5 minutes'), "
                           "updated_at = %s - ((id %% 977) * interval '1 hour')", [now, now])
        changed = True
    if not Case.objects.filter(due_at__isnull=False).exists():
        # Every case has a deadline, as the SLA gives one on creation: open rows show a countdown.
        with connection.cursor() as cursor:
            cursor.execute("UPDATE cases_case SET due_at = created_at + interval '3 days'")
        changed = True
    if not Case.objects.filter(restricted=True).exists():
        # One case in 1,000 restricted to named people; the fraud member named on every other one.
        with connection.cursor() as cursor:
            cursor.execute("UPDATE cases_case SET restricted = true WHERE id % 1000 = 0")
        CaseRestriction.objects.bulk_create(
            CaseRestriction(case_id=pk, user=bench)
            for pk in Case.objects.filter(restricted=True).values_list("pk", flat=True) if pk % 2000 == 0)
        changed = True
    if changed:
        # The UPDATEs leave a dead copy of every row: until a vacuum, index scans visit them and
        # counts cannot be index-only (the first page's SQL took 25 ms at 10^6 instead of 1 ms).
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE cases_case")


KINDS = [
    ("first page", {}),
    ("page 50", {"page": 50}),
    ("status=new", {"status": "new"}),
    ("priority=critical", {"priority": "critical"}),
    ("case_type=fraud_alert", {"case_type": "fraud_alert"}),
    ("assignee=bench", {"assignee": "bench"}),
    ("assignee=none", {"assignee": "none"}),
    ("search q=refund pay", {"q": "refund pay"}),
    ("search q=0012345 (reference part)", {"q": "0012345"}),
    ("search pasted reference", {"q": "BFRA-0054321"}),
    *[(f"sort {o}", {"ordering": o}) for o in ("priority", "-priority", "created", "updated", "-updated",
                                               "reference", "status")],
    ("sort priority, page 50", {"ordering": "priority", "page": 50}),
    # The navigation's entry invalidated before each request (a notification, a pinned view):
    # what the page costs when it reads the pinned views, the count, teams and investigators again.
    ("first page, navigation cold", {}),
]
COLD = "first page, navigation cold"


PEOPLE = {"admin": "bench-admin", "fraud": "bench"}


def measure(repeats: int, who: str) -> list[tuple[str, str, float, float, int, float]]:
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from casework.cases.navigation import nav_changed

    client = Client()
    client.login(username=PEOPLE[who], password="bench-pass-123")
    bench = User.objects.get(username=PEOPLE[who])
    rows = []
    targets = [("page", "/cases/", {}), ("htmx", "/cases/", {"HTTP_HX_REQUEST": "true",
                                                              "HTTP_HX_TARGET": "queue-results"}),
               ("api", "/api/cases/", {})]
    # As the web server's process does once loaded (casework/wsgi.py): what it holds leaves the
    # garbage collector's passes (casework/ops/gc_tuning.py).
    for _target, url, headers in targets:
        client.get(url, {}, **headers)
    from casework.ops.gc_tuning import gc_tune

    gc_tune()
    for label, params in KINDS:
        for target, url, headers in targets:
            if label == COLD and target != "page":
                continue
            client.get(url, params, **headers)  # warm-up: template loading, first connection
            times, cpu = [], []
            for _ in range(repeats):
                if label == COLD:
                    nav_changed(user_id=bench.pk)
                with CaptureQueriesContext(connection) as queries:
                    start, start_cpu = time.perf_counter(), time.process_time()
                    response = client.get(url, params, **headers)
                    times.append((time.perf_counter() - start) * 1000)
                    cpu.append((time.process_time() - start_cpu) * 1000)
                assert response.status_code == 200, (label, target, response.status_code)
            times.sort()
            p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
            rows.append((label, target, statistics.median(times), p95, len(queries), statistics.median(cpu)))
    return rows


def run_size(args, n: int) -> list[dict]:
    """One size, in a process of its own (Django is set up once per process, on one database)."""
    url = f"{args.database_url}_{size_label(n)}"
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([sys.executable, __file__, "--one", str(n), "--database-url", url, "--cache-url",
                        args.cache_url, "--repeats", str(args.repeats), "--people", args.people,
                        "--json", out.name], check=True)
        return json.loads(Path(out.name).read_text())


def one(args) -> None:
    setup(args.database_url, args.cache_url)
    from casework.cases.models import Case

    start = time.perf_counter()
    before = Case.objects.count()
    load(args.one)
    loaded = {"cases": args.one - before, "seconds": round(time.perf_counter() - start, 1)} if before < args.one else None
    results = []
    for who in args.people.split(","):
        load_before = os.getloadavg()[0]
        rows = measure(args.repeats, who)
        results.append({"size": args.one, "who": who, "loaded": loaded, "rows": rows,
                        "load": [round(load_before, 1), round(os.getloadavg()[0], 1)]})
        loaded = None
    Path(args.json).write_text(json.dumps(results))


def table(results: list[dict], repeats: int) -> str:
    sizes = sorted({r["size"] for r in results})
    heads = [f"{r['size']:,} {r['who']}" for r in results]
    lines = [f"{', '.join(f'{n:,}' for n in sizes)} cases, {repeats} requests per row, {platform.machine()} "
             f"{os.cpu_count()} cores, PostgreSQL, navigation cache on Redis, Django test client in-process; "
             f"run {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC.", ""]
    for r in results:
        loaded = (f"loaded {r['loaded']['cases']:,} cases in {r['loaded']['seconds']:.0f} s; " if r["loaded"] else "")
        lines.append(f"- {r['size']:,} cases as {r['who']}: {loaded}1-minute load average {r['load'][0]} before, "
                     f"{r['load'][1]} after.")
    lines += ["", "Per size: p50 / p95 wall ms, this process's CPU ms (median: the Python side, rendering "
              "included; the database server's time is not in it, and load inflates it less than the wall "
              "time), queries per request.", ""]
    head = "| request | target | " + " | ".join(f"{h}: p50 / p95 | CPU | q" for h in heads) + " |"
    lines += [head, "|---|---|" + "---:|---:|---:|" * len(heads)]
    by_size = [{(label, target): (p50, p95, q, cpu) for label, target, p50, p95, q, cpu in r["rows"]}
               for r in results]
    for label, target, *_ in results[0]["rows"]:
        cells = " | ".join("{:.0f} / {:.0f} | {:.1f} | {}".format(*m[(label, target)][:2], m[(label, target)][3],
                                                                  m[(label, target)][2]) for m in by_size)
        lines.append(f"| {label} | {target} | {cells} |")
    lines.append("")
    for target in ("page", "htmx", "api"):
        worst = [max(v[1] for (label, t), v in m.items() if t == target) for m in by_size]
        cpu = [statistics.median(v[3] for (label, t), v in m.items() if t == target) for m in by_size]
        queries = [sorted({v[2] for (label, t), v in m.items() if t == target}) for m in by_size]
        lines.append(f"- {target}: worst p95 " + ", ".join(f"{w:.0f} ms" for w in worst)
                     + "; median CPU " + ", ".join(f"{c:.1f} ms" for c in cpu)
                     + "; queries per request " + ", ".join("/".join(map(str, q)) for q in queries)
                     + f" ({', '.join(heads)}).")
    worst = max(row[3] for r in results for row in r["rows"])
    lines += ["", f"Worst p95: {worst:.1f} ms (target: at or under 100 ms)."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database-url", default=DEFAULT_URL, help="each size's database adds _10k, _100k, _1m")
    parser.add_argument("--cache-url", default=DEFAULT_CACHE)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--people", default="admin,fraud", help="admin (sees every case), fraud (a team member)")
    parser.add_argument("--write-readme", action="store_true")
    parser.add_argument("--block", default="queue_100k", help="the README block --write-readme replaces")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--json", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args)
        return
    results = [r for n in args.sizes.split(",") for r in run_size(args, int(n))]
    text = table(results, args.repeats)
    print(text)
    if args.write_readme:
        write_block(args.block, text)


if __name__ == "__main__":
    main()
