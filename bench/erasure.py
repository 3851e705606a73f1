"""Erasure of a data subject named in 1,000 cases (issue 42). Run by hand:

    .venv/bin/python bench/erasure.py --database-url postgres://postgres@127.0.0.1:5432/casework_erasure_bench \\
        [--cases 1000] [--others 10000] [--batch 50] [--write-readme]

The database must exist and be empty; it is migrated and loaded here. Loads, with bulk
inserts: one customer (name, e-mail, customer id) and their entity; CASES cases naming them
(half support tickets, which the erasure removes, half fraud alerts, which it pseudonymises
under the AML duty), each with a title and description quoting them, a final decision whose
reason names them, a comment, an agent run whose state quotes them with two agent calls
(input and output), an outbox event, and three audit entries quoting them; and OTHERS cases of
other customers with the same parts, which the erasure must read past (its sweep of every
table for the subject's identifiers is a search of the whole table).

Then asks for the erasure (bulk: a second person approves) and times `erasure_run` from the
plan to the end, and prints the time, the batches, and the rows touched per model, the
tombstoned audit entries and what was removed, as Markdown (the block between bench/README.md's
erasure markers; --write-readme replaces it there). Afterwards it checks that no row of the
database names the subject and that the audit chain verifies.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

NAME, EMAIL, CUSTOMER = "Philippa Wexcombe", "philippa.wexcombe@example.org", "CUST-880001"


def setup(database_url: str, batch: int) -> None:
    var = tempfile.mkdtemp(prefix="erasure_bench_")
    os.environ.update({"DEBUG": "true", "SECRET_KEY": "bench", "VAR_DIR": var, "LLM_PROVIDER": "offline",
                       "DATABASE_URL": database_url, "AUDIT_SEQUENCER": "inline", "CELERY_BROKER_URL": "memory://",
                       "CELERY_TASK_ALWAYS_EAGER": "false", "ERASURE_BATCH": str(batch),
                       "FIELD_ENCRYPTION_KEYS": os.environ.get("FIELD_ENCRYPTION_KEYS",
                                                               "dGVzdC1vbmx5LWZpZWxkLWtleS1ub3QtZm9yLXByb2Q="),
                       "DJANGO_SETTINGS_MODULE": "casework.settings"})
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def load(cases: int, others: int, author) -> dict:
    from agents.models import AgentCall, AgentRun
    from audit.services import audit_entry_build, audit_record_many, audit_sequence
    from casework.cases.models import Case, Comment, Decision
    from casework.entities.models import Entity, Mention
    from casework.outbox.models import OutboxEvent
    from casework.support.models import Customer

    now = datetime.now(UTC)
    Customer.objects.create(customer_id=CUSTOMER, name=NAME, email=EMAIL, plan="pro")
    subject = Entity.objects.create(kind="customer", value=CUSTOMER, display=CUSTOMER)
    total = cases + others
    rows_cases, prefix = [], {"support_ticket": "SUP", "fraud_alert": "FRA"}
    for n in range(total):
        case_type = "support_ticket" if n % 2 else "fraud_alert"
        who = (NAME, EMAIL) if n < cases else (f"Other Person {n}", f"person{n}@example.net")
        rows_cases.append(Case(case_type=case_type, reference=f"{prefix[case_type]}-{n + 1:06d}",
                               title=f"{who[0]} wrote", description=f"{who[0]} <{who[1]}> asked about invoice {n}.",
                               status="closed", closed_at=now))
    created = Case.objects.bulk_create(rows_cases, batch_size=2000)
    entities = Entity.objects.bulk_create([Entity(kind="customer", value=f"CUST-{n:06d}", display=f"CUST-{n:06d}")
                                           for n in range(cases, total)], batch_size=2000)
    Mention.objects.bulk_create([Mention(entity=subject if i < cases else entities[i - cases], case=case,
                                         source_field="customer_id") for i, case in enumerate(created)],
                                batch_size=2000)
    Decision.objects.bulk_create([Decision(case=c, outcome="no_action", final=True, decided_at=now,
                                           reason=f"Answered {c.title.removesuffix(' wrote')} by phone.")
                                  for c in created], batch_size=2000)
    Comment.objects.bulk_create([Comment(case=c, author=author, body=f"Called {c.title.removesuffix(' wrote')}.") for c in created],
                                batch_size=2000)
    runs = AgentRun.objects.bulk_create([AgentRun(case=c, pipeline="bench", status="completed",
                                                  state={"customer": {"name": c.title.removesuffix(" wrote")}})
                                         for c in created], batch_size=2000)
    AgentCall.objects.bulk_create([AgentCall(run=r, key=k, name=k, status="ok",
                                             input={"messages": [{"role": "user", "content": r.state["customer"]["name"]}]},
                                             output={"summary": f"{r.state['customer']['name']} is a customer."})
                                   for r in runs for k in ("lookup", "reply")], batch_size=2000)
    OutboxEvent.objects.bulk_create([OutboxEvent(type="case.closed", case=c, payload={"title": c.title})
                                     for c in created], batch_size=2000)
    for start in range(0, total, 2000):
        entries = [audit_entry_build(actor="system", action=f"bench.step{k}", case=c,
                                     data={"about": c.title, "step": k})
                   for c in created[start:start + 2000] for k in range(3)]
        audit_record_many(entries)
    audit_sequence(batch_size=100_000)
    return {"cases": cases, "others": others, "subject": subject}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--others", type=int, default=10000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    setup(args.database_url, args.batch)

    from django.db import connection

    from audit.services import audit_sequence, audit_verify_chain
    from casework.people.roles import DATA_PROTECTION
    from casework.people.services import user_create
    from casework.privacy.erasure import erasure_approve, erasure_request
    from casework.privacy.erasure_run import erasure_run
    from casework.privacy.rows import places, search_q

    dora = user_create(actor="system", username="dora-bench", password="dora-pass-123", role=DATA_PROTECTION)
    dirk = user_create(actor="system", username="dirk-bench", password="dirk-pass-123", role=DATA_PROTECTION)
    t0 = time.perf_counter()
    loaded = load(args.cases, args.others, dora)
    load_s = time.perf_counter() - t0
    request = erasure_request(actor=dora, subjects=[[loaded["subject"]]], reason="Bench: asked by e-mail.")
    erasure_approve(actor=dirk, request=request)  # the task is queued on an in-memory broker nobody reads
    t0 = time.perf_counter()
    if os.environ.get("BENCH_PROFILE"):
        import cProfile
        import pstats

        profile = cProfile.Profile()
        request = profile.runcall(erasure_run, request_id=request.pk)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
    else:
        request = erasure_run(request_id=request.pk)
    run_s = time.perf_counter() - t0
    assert request.status == "done", request.error
    audit_sequence()
    t0 = time.perf_counter()
    check = audit_verify_chain()
    verify_s = time.perf_counter() - t0
    assert check.intact, check
    # The finish's search of every table, again (it finds nothing now): what it costs.
    t0 = time.perf_counter()
    left = sum(p.model._default_manager.filter(search_q(p, [NAME, EMAIL, CUSTOMER])).count()
               for p in places() if p.searchable)
    sweep_s = time.perf_counter() - t0
    assert left == 0, f"{left} rows still name the subject"

    report = request.report
    changed = sorted(report["changed"].items(), key=lambda kv: -kv[1]["rows"])
    touched = (sum(v["rows"] for v in report["changed"].values()) + sum(report["removed"].values())
               + report["audit"].get("audit entries tombstoned", 0) + report["entities"].get("pseudonymised", 0))
    lines = [
        f"Machine: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, Python "
        f"{platform.python_version()}; PostgreSQL {connection.pg_version // 10000}; run "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; load average {os.getloadavg()[0]:.1f} at the end (a shared "
        "machine: the figures move with it).",
        f"A customer named in {args.cases:,} cases ({args.cases // 2:,} support tickets erased, "
        f"{args.cases - args.cases // 2:,} fraud alerts pseudonymised under the AML duty), beside "
        f"{args.others:,} cases of other customers; 3 audit entries per case; "
        f"ERASURE_BATCH={args.batch}. Loading took {load_s:.1f} s.",
        "",
        "| measurement | figure |",
        "|---|---|",
        f"| erasure_run, plan to end | {run_s:.2f} s |",
        f"| batches | {request.batches} |",
        f"| rows touched (changed, removed, tombstoned, entities) | {touched:,} |",
        f"| per case | {run_s / args.cases * 1000:.1f} ms |",
        f"| audit entries tombstoned | {report['audit'].get('audit entries tombstoned', 0):,} |",
        f"| of which about: the search of every table for the identifiers ({len(places())} tables) "
        f"| {sweep_s:.2f} s |",
        f"| verify_audit_chain afterwards ({check.checked:,} entries) | {verify_s:.2f} s |",
        "",
        "| model | rows changed | fields |",
        "|---|---|---|",
        *[f"| {label} | {v['rows']:,} | {', '.join(v['fields'])} |" for label, v in changed],
        "",
        "Removed (support tickets, retention's own purge): "
        + ", ".join(f"{k} {v:,}" for k, v in sorted(report["removed"].items())) + ".",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write_readme:
        from bench.readme_block import write_block

        write_block("erasure", text)


if __name__ == "__main__":
    main()
