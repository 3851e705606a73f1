"""Entities across cases at 10^6 mentions (issue 28). Run by hand:

    .venv/bin/python bench/entities.py --database-url postgres://postgres@127.0.0.1:5432/casework_entities_bench \\
        [--cases 100000] [--entities 200000] [--mentions 1000000] [--samples 300] [--measure-only] [--write-readme]

The database must exist and be empty (or, with --measure-only, be loaded by an earlier run).
Loads, with COPY: CASES cases of the five types (a third decided, some as fraud), ENTITIES
entities of every kind, exactly MENTIONS mentions (about ten per case, every case naming one at
least and every entity named at least once; popularity is skewed: most entities are named by a
handful of cases, 20 "hot" ones, a merchant or a popular IP, by thousands). Then measures, each
over SAMPLES samples, the median and p95 milliseconds and the number of queries of:

  panel              the case page's "Seen in other cases" (selector + its template), random cases
  entity page        GET /entities/<id>/ through the test client, as an investigator (audited
                     view: session, user, audit write and the base template included)
  entity page, hot   the same for the 20 most-named entities, their newest page
  ... a deep page    the same, the page of cases older than each one's 2,000th newest
  extraction         recording one new case's five entities (two of them new) in its transaction
  fraud alert creation, with and without extraction: the whole service call (validation,
                     scoring, case, alert, audit, run queued, commit), alternating the two, the
                     second with the fraud service's extraction call swapped for a no-op (here
                     only); and the extraction call timed inside the creations that made it

and prints the figures as Markdown, the block between bench/README.md's entities markers
(--write-readme replaces it there).
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
# The deep page: older than each hot entity's DEEP-th newest case (an offset would read them all).
DEEP = 2000
# A fraud alert as the upstream system sends it (the fields tests/fraud/conftest.py's CLEAN has).
ALERT = {"declared_income_annual": 52000.0, "deposits_total": 41000.0, "deposits_count": 14,
         "withdrawals_total": 30500.0, "withdrawals_count": 35, "deposit_withdraw_cycle_days_avg": 19.0,
         "deposits_vs_income_ratio": 0.79, "kyc_face_match_score": 0.94, "account_age_days": 1200,
         "vpn_usage_pct": 4.0, "countries_accessed_count": 2, "device_shared_count": 0, "ip_shared_count": 1}


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
    return statistics.median(times) * 1000, times[max(0, int(len(times) * 0.95) - 1)] * 1000


def measure(fn, samples, *, warm_up: int = 5) -> tuple[float, float, int]:
    """(median ms, p95 ms, most queries) of fn over the samples; fn may return its own
    seconds (a part of what it does), else the whole call is timed."""
    from django.db import connection, reset_queries
    from django.test.utils import CaptureQueriesContext

    samples = list(samples)
    for sample in samples[:warm_up]:
        fn(sample)
    times, queries = [], set()
    for sample in samples:
        reset_queries()  # DEBUG keeps a log; keep it short
        with CaptureQueriesContext(connection) as ctx:
            start = time.perf_counter()
            inner = fn(sample)
            times.append(inner if inner is not None else time.perf_counter() - start)
        queries.add(len(ctx))
    median, p95 = _stats(times)
    return median, p95, max(queries)


def creation(fraud_services, *, samples: int, run: str, rng: random.Random, entities: int):
    """A fraud alert made through its service, alternately with and without extraction: (median,
    p95, queries) of each, and of the extraction call inside the creations that made it (the
    type's read of its record and the recording). Without is the service with its
    entities_extract call swapped for a no-op, for this measurement only."""
    from django.db import connection, reset_queries
    from django.test.utils import CaptureQueriesContext

    extract = fraud_services.entities_extract
    inside: list[float] = []
    inside_queries = 0

    def timed(*, case):
        nonlocal inside_queries
        with CaptureQueriesContext(connection) as ctx:
            start = time.perf_counter()
            named = extract(case=case)
            inside.append(time.perf_counter() - start)
        inside_queries = max(inside_queries, len(ctx))
        return named

    times: dict[bool, list[float]] = {True: [], False: []}
    queries: dict[bool, int] = {True: 0, False: 0}
    warm_up = 10
    try:
        for i in range(2 * samples + warm_up):
            extracting = i % 2 == 0
            fraud_services.entities_extract = timed if extracting else (lambda *, case: 0)
            data = {**ALERT, "account_id": f"ACC-B{run}-{i}", "device_ids": [f"v{rng.randint(1, entities):07d}"],
                    "ip_addresses": [f"10.9.{i // 256 % 256}.{i % 256}"]}
            reset_queries()
            with CaptureQueriesContext(connection) as ctx:
                start = time.perf_counter()
                fraud_services.alert_create(actor="system", data=data, via="bench")
                elapsed = time.perf_counter() - start
            if i >= warm_up:
                times[extracting].append(elapsed)
                queries[extracting] = max(queries[extracting], len(ctx))
    finally:
        fraud_services.entities_extract = extract
    return ([(*_stats(times[mode]), queries[mode]) for mode in (True, False)]
            + [(*_stats(inside[warm_up // 2:]), inside_queries)])


def machine() -> str:
    import platform

    import django
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        pg = cursor.fetchone()[0].split()[0]
    return (f"{os.cpu_count()} CPUs, Python {platform.python_version()}, PostgreSQL {pg} on the same machine, "
            f"Django {django.get_version()}")


def load_average() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--entities", type=int, default=200_000)
    parser.add_argument("--mentions", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--measure-only", action="store_true", help="The database is loaded already: measure.")
    parser.add_argument("--write-readme", action="store_true", help="Replace the figures in bench/README.md.")
    args = parser.parse_args()
    setup(args.database_url)
    rng = random.Random(28)

    from django.db import transaction
    from django.db.models import Count
    from django.template.loader import render_to_string
    from django.test import Client

    from casework.cases.models import Case
    from casework.cases.types import Found
    from casework.entities import selectors
    from casework.entities.extraction import entities_record
    from casework.entities.forms import LinkForm, MergeForm
    from casework.entities.models import Entity, Mention
    from casework.fraud import services as fraud_services
    from casework.people.roles import INVESTIGATOR
    from casework.people.services import user_create

    loaded = ""
    if not args.measure_only:
        figures = load(cases=args.cases, entities=args.entities, mentions=args.mentions, rng=rng)
        loaded = f" (loaded with COPY in {figures['seconds']:.0f} s)"
        print(f"Loaded {figures['mentions']:,} mentions{loaded}", flush=True)
    n_cases, n_entities, n_mentions = Case.objects.count(), Entity.objects.count(), Mention.objects.count()
    before = load_average()
    started = datetime.now(UTC)
    print(f"Measuring {n_cases:,} cases, {n_entities:,} entities, {n_mentions:,} mentions; "
          f"load average {before}", flush=True)

    case_ids = [rng.randint(1, args.cases) for _ in range(args.samples)]
    cases = {c.pk: c for c in Case.objects.filter(pk__in=case_ids)}

    run = f"{time.time_ns() % 10**9:09d}"
    user = user_create(actor="system", username=f"bench{run}", password="bench-pass-123", role=INVESTIGATOR)
    # A person in a team owning every type: what they see is filtered by the rule, all of it shown.
    from casework.cases.types import CASE_TYPES
    from casework.people.teams import team_create, team_member_set

    team_member_set(actor="system", team=team_create(actor="system", name=f"Bench {run}",
                                                     case_types=list(CASE_TYPES)), user=user)

    def panel(pk):
        case = cases[pk]
        render_to_string("entities/_case_panel.html", {
            "case": case, "rows": selectors.case_seen_elsewhere(case, viewer=user),
            "links": selectors.case_links(case, viewer=user), "link_form": LinkForm(), "merge_form": MergeForm()})

    client = Client()
    client.force_login(user)

    def entity_page(sample):
        pk, query = sample if isinstance(sample, tuple) else (sample, {})
        response = client.get(f"/entities/{pk}/", query)
        assert response.status_code == 200, response.status_code

    hot = list(range(1, HOT + 1)) * (args.samples // HOT + 1)
    deep = []
    for pk in range(1, HOT + 1):
        at, mention = (Mention.objects.filter(entity_id=pk).order_by("-created_at", "-id")
                       .values_list("created_at", "pk")[DEEP - 1])
        deep.append((pk, {"before": str(selectors.Cursor(at, mention))}))
    deep = deep * (args.samples // HOT + 1)

    # Cases made one at a time, as a service would, each naming five entities, two new.
    new_cases = Case.objects.bulk_create([Case(reference=f"FRA-N{run}{i:05d}"[:20], case_type="fraud_alert",
                                               title="new") for i in range(args.samples)])

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

    results = [
        ("panel \"Seen in other cases\" (selector + template)", "p95 <= 100", *measure(panel, case_ids)),
        ("entity page GET /entities/<id>/ (audited; session, audit write, base template included)", "p95 <= 100",
         *measure(entity_page, [rng.randint(HOT + 1, args.entities) for _ in range(args.samples)])),
        (f"entity page, the {HOT} most-named entities, newest page", "p95 <= 100",
         *measure(entity_page, hot[:args.samples])),
        (f"entity page, the {HOT} most-named entities, the page older than their {DEEP:,}th case", "p95 <= 100",
         *measure(entity_page, deep[:args.samples])),
        ("extraction: one case naming 5 entities (2 new), inside its transaction", "p95 <= 5",
         *measure(extraction, range(args.samples), warm_up=0)),
    ]
    with_, without, inside = creation(fraud_services, samples=args.samples, run=run, rng=rng,
                                      entities=args.entities)
    results += [("fraud alert creation through its service, with extraction (commit included)", "", *with_),
                ("the same, extraction swapped for a no-op (alternating with the above)", "", *without),
                ("the extraction call inside those creations (the alert's read of its links + recording)",
                 "p95 <= 5", *inside)]
    most_named = (Mention.objects.filter(entity_id__lte=HOT).values("entity_id").annotate(n=Count("id"))
                  .order_by("-n").values_list("n", flat=True).first())
    lines = [f"Run {started:%Y-%m-%d %H:%M} UTC{loaded}: {n_cases:,} cases, {n_entities:,} entities, "
             f"{n_mentions:,} mentions (the most-named entity: {most_named:,}); {args.samples} samples each. "
             f"Machine: {machine()}; load average (1 / 5 / 15 min) {before} before, {load_average()} after.",
             "", "| measured | target | median ms | p95 ms | queries |", "|---|---|---|---|---|"]
    lines += [f"| {name} | {target} | {median:.1f} | {p95:.1f} | {queries} |"
              for name, target, median, p95, queries in results]
    missed = [f"{name} (p95 {p95:.1f} ms)" for name, target, _, p95, _ in results
              if target and p95 > float(target.split("<=")[1])]
    lines += ["", "Targets (p95): " + ("all met." if not missed else "missed by " + "; ".join(missed) + ".")]
    lines += ["", f"What extraction adds to a fraud alert's creation: {inside[0]:.1f} ms at the median and "
                  f"{inside[1]:.1f} ms at p95 timed around the call ({inside[2]} queries); the difference of the "
                  f"creations' medians with and without it is {with_[0] - without[0]:.1f} ms (it also holds the "
                  "commit's extra work: the mentions' deferred foreign-key checks). Target: at most 5 ms."]
    text = "\n".join(lines)
    print("\n" + text)
    if args.write_readme:
        from readme_block import write_block

        write_block("entities", text)


if __name__ == "__main__":
    main()
