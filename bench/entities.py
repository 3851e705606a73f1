"""Entities across cases at 10^6 mentions (issue 28). Run by hand:

    .venv/bin/python bench/entities.py --database-url postgres://postgres@127.0.0.1:5432/casework_entities_bench \\
        [--cases 100000] [--entities 200000] [--mentions 1000000] [--samples 300]

The database must exist and be empty. Loads, with COPY: CASES cases of the five types (a third
decided, some as fraud), ENTITIES entities of every kind, MENTIONS mentions (about ten per case;
entity popularity is skewed: most entities are named by a handful of cases, a few "hot" ones, a
merchant or a popular IP, by thousands). Then measures, each over SAMPLES random cases or
entities (hot ones included), the median and p95 milliseconds and the number of queries of:

  panel        the case page's "Seen in other cases" (selector + its template)
  entity page  GET /entities/<id>/ through the test client, as an investigator (audited view)
  entity page, hot   the same for the 20 most-named entities
  extraction   recording one new case's five entities (two of them new) in its transaction

and prints a Markdown table (bench/README.md, "Entities across cases").
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TYPES = ("fraud_alert", "support_ticket", "access_change", "transaction_investigation", "release_risk")
PREFIX = {"fraud_alert": "FRA", "support_ticket": "SUP", "access_change": "ACC", "transaction_investigation": "TXN",
          "release_risk": "REL"}
OUTCOMES = {"fraud_alert": ("confirmed_fraud", "legit"), "support_ticket": ("replied", "escalated"),
            "access_change": ("accepted", "rejected"), "transaction_investigation": ("fraud", "not_fraud"),
            "release_risk": ("go", "no_go")}
KINDS = ("account", "card", "customer", "employee", "email", "phone", "ip", "device", "merchant", "release_component")
HOT = 20


def setup(database_url: str) -> None:
    var = tempfile.mkdtemp(prefix="entities_bench_")
    os.environ.update({"DEBUG": "true", "SECRET_KEY": "bench", "VAR_DIR": var, "LLM_PROVIDER": "offline",
                       "DATABASE_URL": database_url, "AUDIT_SEQUENCER": "off",
                       "CELERY_BROKER_URL": "memory://", "DJANGO_SETTINGS_MODULE": "casework.settings"})
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _copy(table: str, columns: list[str], rows) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


def _per_case(*, cases: int, mentions: int, rng: random.Random) -> list[int]:
    """How many entities each case names: about mentions / cases (spread +-2), at least one,
    adding up to exactly `mentions`."""
    mean = mentions / cases
    counts = [max(1, round(rng.gauss(mean, 2))) for _ in range(cases)]
    while (excess := sum(counts) - mentions) != 0:
        i = rng.randrange(cases)
        if excess > 0 and counts[i] > 1:
            counts[i] -= 1
        elif excess < 0:
            counts[i] += 1
    return counts


def _mentions(*, cases: int, entities: int, mentions: int, rng: random.Random):
    """(case, entity) pairs, exactly `mentions` of them, every case naming at least one entity
    and every entity named at least once. Skewed popularity: HOT entities take 5 % of the
    mentions, the rest follow a power law (most entities in a handful of cases), with a sweep
    through the others in a random order so that none is left unnamed."""
    if mentions < cases or mentions < entities:
        raise SystemExit("--mentions must be at least --cases and --entities.")
    sweep = list(range(HOT + 1, entities + 1))
    rng.shuffle(sweep)
    # The sweep's share of the cold picks: enough to name every entity by about 4/5 of the way.
    share = min(1.0, 1.25 * len(sweep) / (mentions * 0.95))
    for case, k in enumerate(_per_case(cases=cases, mentions=mentions, rng=rng), start=1):
        seen: set[int] = set()
        while len(seen) < k:
            if rng.random() < 0.05:
                entity = rng.randint(1, HOT)
            elif sweep and rng.random() < share:
                entity = sweep.pop()
            else:
                entity = min(entities, HOT + 1 + int((entities - HOT) * rng.random() ** 1.6))
            if entity not in seen:
                seen.add(entity)
                yield case, entity
    if sweep:
        raise SystemExit(f"{len(sweep)} entities left unnamed: raise --mentions.")


def load(*, cases: int, entities: int, mentions: int, rng: random.Random) -> dict:
    from django.db import connection, transaction

    start = time.perf_counter()
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    step = timedelta(minutes=5)
    with transaction.atomic():
        _copy("cases_case", ["id", "reference", "case_type", "title", "description", "status", "priority",
                             "created_at", "updated_at", "closed_at"],
              ((i, f"{PREFIX[TYPES[i % 5]]}-B{i:07d}", TYPES[i % 5], f"Bench case {i}", "",
                "closed" if i % 3 == 0 else "in_progress", "medium", t0 + i * step, t0 + i * step,
                t0 + i * step + step if i % 3 == 0 else None) for i in range(1, cases + 1)))
        _copy("cases_decision", ["case_id", "outcome", "reason", "decided_at", "final", "data"],
              ((i, OUTCOMES[TYPES[i % 5]][0 if i % 7 == 0 else 1], "bench", t0 + i * step + step, True, "{}")
               for i in range(3, cases + 1, 3)))
        _copy("entities_entity", ["id", "kind", "value", "display", "created_at"],
              ((i, KINDS[i % len(KINDS)], f"v{i:07d}", f"v{i:07d}", t0) for i in range(1, entities + 1)))
        _copy("entities_mention", ["entity_id", "case_id", "source_field", "source_agent", "source_tool",
                                   "created_at"],
              ((entity, case, "bench", "", "", t0 + case * step)
               for case, entity in _mentions(cases=cases, entities=entities, mentions=mentions, rng=rng)))
        # Entities named by a case decided as fraud are flagged (what case_close does).
        with connection.cursor() as cursor:
            cursor.execute("""UPDATE entities_entity e SET confirmed_fraud_at = d.decided_at,
                                     confirmed_fraud_case_id = d.case_id
                              FROM entities_mention m JOIN cases_decision d ON d.case_id = m.case_id
                              WHERE m.entity_id = e.id AND d.outcome IN ('confirmed_fraud', 'fraud')""")
            for table in ("cases_case", "entities_entity", "entities_mention", "cases_decision"):
                cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
    with connection.cursor() as cursor:
        # What autovacuum does after a bulk load: statistics, and the visibility map that
        # lets a count or a range read the index alone.
        cursor.execute("VACUUM ANALYZE")
        cursor.execute("SELECT count(*) FROM entities_mention")
        loaded = cursor.fetchone()[0]
    return {"seconds": time.perf_counter() - start, "mentions": loaded}


def _stats(times: list[float]) -> tuple[float, float]:
    times = sorted(times)
    return statistics.median(times) * 1000, times[int(len(times) * 0.95) - 1] * 1000


def measure(fn, samples) -> tuple[float, float, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times, queries = [], set()
    for sample in samples:
        with CaptureQueriesContext(connection) as ctx:
            start = time.perf_counter()
            inner = fn(sample)
            times.append(inner if inner is not None else time.perf_counter() - start)
        queries.add(len(ctx))
    median, p95 = _stats(times)
    return median, p95, max(queries)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--entities", type=int, default=200_000)
    parser.add_argument("--mentions", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--measure-only", action="store_true", help="The database is loaded already: measure.")
    args = parser.parse_args()
    setup(args.database_url)
    rng = random.Random(28)

    from django.db import transaction
    from django.template.loader import render_to_string
    from django.test import Client

    from casework.cases.models import Case
    from casework.cases.types import Found
    from casework.entities import selectors
    from casework.entities.extraction import entities_record
    from casework.entities.forms import LinkForm, MergeForm
    from casework.entities.models import Entity
    from casework.people.roles import INVESTIGATOR
    from casework.people.services import user_create

    if args.measure_only:
        from casework.entities.models import Mention

        print(f"Measuring {Case.objects.count():,} cases, {Entity.objects.count():,} entities, "
              f"{Mention.objects.count():,} mentions")
    else:
        loaded = load(cases=args.cases, entities=args.entities, mentions=args.mentions, rng=rng)
        print(f"Loaded {args.cases:,} cases, {args.entities:,} entities, {loaded['mentions']:,} mentions "
              f"in {loaded['seconds']:.0f} s", flush=True)

    case_ids = [rng.randint(1, args.cases) for _ in range(args.samples)]
    cases = {c.pk: c for c in Case.objects.filter(pk__in=case_ids)}

    def panel(pk):
        case = cases[pk]
        render_to_string("entities/_case_panel.html", {
            "case": case, "rows": selectors.case_seen_elsewhere(case), "links": selectors.case_links(case),
            "link_form": LinkForm(), "merge_form": MergeForm()})

    run = f"{time.time_ns() % 10**9:09d}"
    user = user_create(actor="system", username=f"bench{run}", password="bench-pass-123", role=INVESTIGATOR)
    client = Client()
    client.force_login(user)

    def entity_page(pk):
        response = client.get(f"/entities/{pk}/")
        assert response.status_code == 200, response.status_code

    # Cases made one at a time, as a service would, each naming five entities, two new.
    new_cases = []

    def extraction(i):
        # Timed inside the case's transaction: what extraction adds to a creation (the commit
        # is the creation's own, with or without it).
        with transaction.atomic():
            case = new_cases[i]
            start = time.perf_counter()
            entities_record(case=case, found=[
                Found("account", f"v{rng.randint(1, args.entities):07d}", "bench"),
                Found("device", f"v{rng.randint(1, args.entities):07d}", "bench"),
                Found("merchant", f"v{rng.randint(1, HOT):07d}", "bench"),
                Found("ip", f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}", "bench"),
                Found("email", f"new{run}.{i}@example.com", "bench")])
            return time.perf_counter() - start

    new_cases = Case.objects.bulk_create([Case(reference=f"FRA-N{run}{i:05d}"[:20], case_type="fraud_alert", title="new")
                                          for i in range(args.samples)])
    results = [
        ("panel (selector + template)", *measure(panel, case_ids)),
        ("entity page GET /entities/<id>/", *measure(entity_page, [rng.randint(HOT + 1, args.entities)
                                                                   for _ in range(args.samples)])),
        (f"entity page, the {HOT} most-named entities", *measure(entity_page, list(range(1, HOT + 1)) * 3)),
        ("extraction: one case, 5 entities", *measure(extraction, range(args.samples))),
    ]
    hot = Entity.objects.get(pk=1).mentions.count()
    print(f"\nMost-named entity: {hot:,} mentions. {args.samples} samples each.\n")
    print("| measured | median ms | p95 ms | queries |")
    print("|---|---|---|---|")
    for name, median, p95, queries in results:
        print(f"| {name} | {median:.1f} | {p95:.1f} | {queries} |")


if __name__ == "__main__":
    main()
