"""Sign-in through the identity provider, and deactivating a person (issue 30). Run by hand:

    .venv/bin/python bench/identity.py [--signins 50] [--cases 10,100,1000] [--database-url URL]
        [--write-readme]

Starts the tests' OpenID Connect provider (node's oidc-provider, tests/fakes/oidc; needs
`bash bin/oidc-provider` once) on 127.0.0.1 and a temporary SQLite database (or PostgreSQL
with --database-url; the name must contain "bench"; it is migrated and written to).

(a) A whole sign-in, --signins times, one after another: /oidc/authenticate/, the provider's
    login form, /oidc/callback/ (token exchange, ID token checks with the JWKS cached,
    userinfo, roles set, session). Casework runs in-process (Django's test client), the
    provider over HTTP, so the figure includes the provider's own time.
(b) A silent renewal (prompt=none), the round trip every OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS.
(c) user_deactivate for someone with N open cases and 5 API tokens and 3 sessions: the one
    transaction SCIM's PATCH active=false runs (each case unassigned through case_assign).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from readme_block import write_block  # bench/ is on sys.path when run as a script

REPO = Path(__file__).resolve().parents[1]


def setup(url: str | None):
    sys.path.insert(0, str(REPO))
    from tests.fakes.oidc_provider import OIDCProvider

    provider = OIDCProvider()
    client_id, secret = provider.client_for("http://testserver")
    if url and "bench" not in url.rsplit("/", 1)[-1]:
        raise SystemExit("The benchmark's database name must contain 'bench'.")
    url = url or f"sqlite:///{tempfile.mkdtemp(prefix='identity-bench-')}/bench.sqlite3"
    os.environ.update(
        DATABASE_URL=url, DEBUG="false", SECRET_KEY="bench-only", AUDIT_SEQUENCER="inline",
        VAR_DIR=str(REPO / "var" / "bench"), ALLOWED_HOSTS="testserver", CELERY_TASK_ALWAYS_EAGER="true",
        OIDC_RP_CLIENT_ID=client_id, OIDC_RP_CLIENT_SECRET=secret, OIDC_ISSUER=provider.issuer,
        OIDC_RP_SCOPES="openid email profile groups", OIDC_GROUP_ROLES="casework-investigators=investigator",
        LLM_PROVIDER="offline")
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "casework.settings")
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return provider, url


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def bench_signins(provider, n: int) -> tuple[list[float], list[float]]:
    from django.test import Client

    from tests.fakes.oidc_provider import ProviderBrowser, callback_path

    provider.account("bench-ines", groups=["casework-investigators"])
    signins, renewals = [], []
    for i in range(n + 1):
        client, browser = Client(), ProviderBrowser(provider)
        started = time.perf_counter()
        location = client.get("/oidc/authenticate/?next=/cases/")["Location"]
        response = client.get(callback_path(browser.authorize(location, login="bench-ines")))
        elapsed = time.perf_counter() - started
        assert response["Location"] == "/cases/", response["Location"]
        # A silent renewal: the provider's session answers at once.
        session = client.session
        session["oidc_id_token_expiration"] = 0
        session.save()
        started = time.perf_counter()
        renew = client.get("/cases/")["Location"]
        back = client.get(callback_path(browser.authorize(renew)))
        renewal = time.perf_counter() - started
        assert back["Location"] == "/cases/", back["Location"]
        browser.close()
        if i:  # the first fills the discovery and JWKS caches
            signins.append(elapsed * 1000)
            renewals.append(renewal * 1000)
    return signins, renewals


def bench_deactivate(sizes: list[int]) -> list[tuple[int, float, int]]:
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client

    from casework.cases.models import Case
    from casework.people.roles import ADMIN, INVESTIGATOR
    from casework.people.services import user_create, user_deactivate
    from casework.security.tokens import api_token_create

    admin = User.objects.filter(username="bench-admin").first() or user_create(
        actor="system", username="bench-admin", password="bench-pass-123", role=ADMIN)
    rows = []
    for n in sizes:
        person = user_create(actor="system", username=f"bench-{n}-{time.time_ns()}", password="bench-pass-123",
                             role=INVESTIGATOR)
        Case.objects.bulk_create([Case(reference=f"BD{n}-{time.time_ns()}-{i}", case_type="fraud_alert",
                                       title=f"Open {i}", status="in_progress", assignee=person) for i in range(n)])
        for _ in range(5):
            api_token_create(actor=admin, user=person)
        for _ in range(3):
            Client().force_login(person)
        queries = []  # counted by a wrapper: Django's query log keeps only the last 9000

        def count(execute, sql, params, many, context, queries=queries):
            queries.append(1)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(count):
            started = time.perf_counter()
            summary = user_deactivate(actor=admin, user=person, reason="bench")
            elapsed = time.perf_counter() - started
        assert len(summary["cases_returned"]) == n and summary["sessions_ended"] == 3
        rows.append((n, elapsed * 1000, len(queries)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--signins", type=int, default=50)
    parser.add_argument("--cases", default="10,100,1000")
    parser.add_argument("--database-url")
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    provider, url = setup(args.database_url)
    try:
        signins, renewals = bench_signins(provider, args.signins)
        deactivations = bench_deactivate([int(n) for n in args.cases.split(",")])
    finally:
        provider.stop()
    database = "PostgreSQL" if url.startswith("postgres") else "SQLite"
    lines = [
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{database}, node's oidc-provider on 127.0.0.1.",
        "",
        "| what | n | p50 ms | p95 ms |",
        "|---|---|---|---|",
        f"| (a) whole sign-in (authenticate, provider login form, callback) | {len(signins)} | "
        f"{statistics.median(signins):.1f} | {pct(signins, 0.95):.1f} |",
        f"| (b) silent renewal (prompt=none round trip) | {len(renewals)} | "
        f"{statistics.median(renewals):.1f} | {pct(renewals, 0.95):.1f} |",
        "",
        "| (c) user_deactivate: open cases | ms | SQL queries |",
        "|---|---|---|",
        *[f"| {n} | {ms:.0f} | {q} |" for n, ms, q in deactivations],
    ]
    text = "\n".join(lines)
    print(text)
    if args.write_readme:
        write_block("identity", text)


if __name__ == "__main__":
    main()
