"""The transaction demo: a generated card history (40 cards, about 3,400 transactions) and
16 investigations run by the pipeline, in every status an investigator meets:

- COMPLETED: card testing, card-not-present bursts, cloned cards, cash-outs, travel and
  ordinary purchases, a new card with no history; several decided (fraud, not fraud,
  inconclusive) with recommendations accepted and one rule promoted;
- TIMED_OUT: one run with a 100 ms investigation timeout (it keeps what it found; resume it);
- FAILED: one run made to fail after two planner steps (the safeguard fail_after_steps, a
  failure injected for the demo; the error says so; resume it);
- PENDING: one queued for the worker (`make run` starts one);
- IN_PROGRESS: one whose run is "killed" after three planner steps (the safeguard
  kill_after_steps): the sweeper re-delivers it after RUN_STALE_AFTER_SECONDS and a worker
  resumes it from its last saved step, so it turns COMPLETED a few minutes after `make run`.
The investigations run here, in this process, one after another (the decided ones first, so
that the later ones find similar decided cases); the queued one is left to the worker.
"""

from __future__ import annotations

from django.db import transaction

from casework.transactions.chaos import SimulatedCrash, crashes_allowed
from casework.transactions.demo_data import card_history, planted
from casework.transactions.models import Investigation

# (card, scenario, what happens after the run)
SCENARIOS = [
    ("CARD-1001", "card_testing", ("fraud", "Cardholder confirmed: the test charges and the laptop were not theirs.")),
    ("CARD-1002", "cnp_burst", ("fraud", "Cardholder denies the jewellery orders; card reissued.")),
    ("CARD-1003", "cloned_card", ("fraud", "Card was in the cardholder's wallet at home: skimmed and cloned.")),
    ("CARD-1004", "travel", ("not_fraud", "Cardholder is on holiday in Portugal; confirmed by phone.")),
    ("CARD-1005", "ordinary", ("not_fraud", "Regular grocery shopping.")),
    ("CARD-1006", "big_ticket", ("inconclusive", "Cardholder unreachable; the purchase is plausible.")),
    ("CARD-1007", "card_testing", None),
    ("CARD-1008", "cnp_burst", None),
    ("CARD-1009", "cloned_card", None),
    ("CARD-1010", "cash_out", None),
    ("CARD-1011", "travel", None),
    ("CARD-1012", "big_ticket", "new_card"),
    ("CARD-1013", "cash_out", "timed_out"),
    ("CARD-1014", "cnp_burst", "failed"),
    ("CARD-1015", "ordinary", "pending"),
    ("CARD-1016", "cloned_card", "killed"),
]
CARDS = 40
# One account seen across three case types (casework.entities): the fraud demo's mule-ring
# alert on ACC-1013 (devices DEV-RING-A1/A2, IP 203.0.113.17) and a support ticket from its
# customer naming the account; here a burst of online orders on its card from a ring device.
STORY_CARD, STORY_DEVICE = "ACC-1013", "DEV-RING-A1"


def demo_rows() -> tuple[list[dict], dict[str, str]]:
    """Every demo transaction, and the investigated transaction id per card."""
    rows, targets = [], {}
    plans = {card: (kind, then) for card, kind, then in SCENARIOS}
    for number in range(CARDS):
        card = f"CARD-{1001 + number}"
        kind, then = plans.get(card, (None, None))
        history = [] if then == "new_card" else card_history(card, days=60, per_day=1.4)
        rows += history
        if kind:
            scenario = planted(kind, card, history)
            if not history:
                scenario = [{**row, "home_country": "NL"} for row in scenario]
            rows += scenario
            targets[card] = scenario[-1]["transaction_id"]
    history = card_history(STORY_CARD, days=60, per_day=1.4)
    scenario = planted("cnp_burst", STORY_CARD, history)
    scenario[-1] = {**scenario[-1], "device_id": STORY_DEVICE}
    # Ids are made from the last four digits, which CARD-1013 shares: prefix them.
    story = [{**row, "transaction_id": row["transaction_id"].replace("TX-", "TX-A", 1)} for row in history + scenario]
    rows += story
    targets[STORY_CARD] = story[-1]["transaction_id"]
    return rows, targets


def demo_load_transactions(*, users: dict, cards: set[str] | None = None) -> int:
    """Import the history and run the investigations (of `cards` only, if given: the tests
    run a few). Idempotent: nothing if any investigation exists."""
    from agents.models import AgentRun
    from agents.tasks import run_pipeline
    from casework.cases.services import case_assign, case_close
    from casework.transactions.ingest import transactions_import
    from casework.transactions.services import investigation_start, recommendation_decide, rule_promote

    if Investigation.objects.exists():
        return 0
    rows, targets = demo_rows()
    with transaction.atomic():
        transactions_import(actor="system", rows=rows, via="demo")
    alice, admin = users.get("alice"), users.get("admin")
    created = 0
    for card, _kind, then in [*SCENARIOS, (STORY_CARD, "cnp_burst", None)]:
        if cards is not None and card not in cards:
            continue
        # "timed_out": two tools of a simulated 40 s each pass the 60 s timeout, on any machine.
        safeguards = {"timed_out": {"investigation_timeout_seconds": 60, "simulated_tool_seconds": 40},
                      "failed": {"fail_after_steps": 2},
                      "killed": {"kill_after_steps": 3}}.get(then if isinstance(then, str) else "", {})
        try:
            with crashes_allowed(), transaction.atomic():  # (an eager queue, as in tests, runs it on commit)
                investigation = investigation_start(actor="system", transaction_id=targets[card],
                                                    initial_state={"safeguards": safeguards} if safeguards else None)
                created += 1
            if then == "pending":
                continue  # left queued for the worker
            run = AgentRun.objects.filter(case=investigation.case).order_by("-id").first()
            with crashes_allowed():
                run_pipeline(run.pk)  # here, now (a worker that got the message first finds it claimed)
        except SimulatedCrash:
            continue  # left `running`, IN_PROGRESS: the sweeper hands it to a worker, which resumes it
        investigation.refresh_from_db()
        if not isinstance(then, tuple) or investigation.status != Investigation.Status.COMPLETED or alice is None:
            continue
        outcome, reason = then
        case = case_assign(actor=alice, case=investigation.case, assignee=alice)
        for rec in investigation.recommendations.all()[:2]:
            recommendation_decide(actor=alice, recommendation=rec, accept=outcome != "not_fraud")
        rule = getattr(investigation, "rule_draft", None) if hasattr(investigation, "rule_draft") else None
        if rule is not None and admin is not None and card == "CARD-1001":
            rule_promote(actor=admin, rule=rule)
        case_close(actor=alice, case=case, outcome=outcome, reason=reason)
    if cards is None:
        demo_load_monitoring(users=users)
    return created


def demo_load_monitoring(*, users: dict) -> None:
    """Monitoring in the demo: exchange rates, a live rule (alice wrote it, mona approved it),
    a shadow rule, and a short stream of today's transactions posted through the same ingest
    as the API. The worker evaluates them: the live rule's hits on one card open one case."""
    from django.utils import timezone

    from casework.transactions.ingest import transactions_import
    from casework.transactions.monitoring.services import rate_set, rule_create, rule_version_approve

    alice, mona, admin = users.get("alice"), users.get("mona"), users.get("admin")
    if not (alice and mona and admin):
        return
    for currency, rate in (("USD", "0.92"), ("GBP", "1.17"), ("CHF", "1.05")):
        rate_set(actor=admin, currency=currency, rate=rate)
    live = rule_create(actor=alice, name="Electronics over 1,000 online", action="review", mode="live",
                       conditions=[{"field": "amount", "op": "gte", "value": 1000},
                                   {"field": "mcc", "op": "in", "value": ["5732", "5734"]},
                                   {"field": "channel", "op": "in", "value": ["ecommerce", "moto"]}],
                       note="Card-not-present electronics fraud seen in TXN cases this quarter.")
    rule_version_approve(actor=mona, version=live)
    shadow = rule_create(actor=alice, name="3-D Secure failed, then approved", action="block", mode="shadow",
                         conditions=[{"field": "three_ds", "op": "eq", "value": "failed"},
                                     {"field": "auth_result", "op": "eq", "value": "approved"}],
                         note="Trying in shadow for two weeks before it blocks anything.")
    rule_version_approve(actor=mona, version=shadow)
    now = timezone.now().replace(microsecond=0)
    stream = []
    for n, (card, amount, currency, mcc, three_ds) in enumerate((
            ("CARD-1031", "1299.00", "USD", "5732", "failed"), ("CARD-1031", "1450.00", "USD", "5732", "failed"),
            ("CARD-1031", "1180.00", "EUR", "5734", "attempted"), ("CARD-1032", "64.90", "GBP", "5411", ""),
            ("CARD-1033", "1049.00", "CHF", "5732", "authenticated"))):
        stream.append({"transaction_id": f"TX-STREAM-{n + 1:03d}", "account_id": card, "card_last4": card[-4:],
                       "amount": amount, "currency": currency, "merchant": "Tech Outlet Online", "mcc": mcc,
                       "country": "GB", "channel": "ecommerce", "device_id": "dev-ring-7",
                       "occurred_at": now.isoformat(), "auth_result": "approved", "three_ds_result": three_ds,
                       "ip_address": "198.51.100.23", "merchant_id": "M-TECH-9", "bin": "453201"})
    with transaction.atomic():
        transactions_import(actor=alice, rows=stream, via="demo")
