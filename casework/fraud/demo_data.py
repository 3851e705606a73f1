"""Fifty realistic demo alerts, generated deterministically (no Django needed).

Each archetype is a pattern an investigator meets: four kinds of clear fraud, five kinds of
hard negative (legitimate customers with one signal that looks bad on its own) and ordinary
clean accounts. About ten are decided, mostly as confirmed fraud, so similarity has history.

`casework/fraud/demo_alerts.csv` holds the same rows for `manage.py import_alerts`; rewrite
it after changing this module with:

    .venv/bin/python -m casework.fraud.demo_data
"""

from __future__ import annotations

import csv
import random
from dataclasses import dataclass
from pathlib import Path

from casework.fraud.features import FEATURE_NAMES

DEMO_SEED = 4_000
DEMO_CSV = Path(__file__).resolve().parent / "demo_alerts.csv"
CSV_COLUMNS = ("account_id", *FEATURE_NAMES)


@dataclass(frozen=True)
class DemoAlert:
    archetype: str
    row: dict
    # A decided demo case: (outcome, reason, knowledge pattern), else None.
    decision: tuple[str, str, dict] | None = None


def _money(rng: random.Random, lo: float, hi: float) -> float:
    return round(rng.uniform(lo, hi), 2)


def _row(rng: random.Random, account_id: str, *, income, deposits, share_withdrawn, deposits_count,
         withdrawals_count, cycle_days, face, age, vpn, countries, devices, ips) -> dict:
    withdrawals = round(deposits * share_withdrawn, 2)
    return {
        "account_id": account_id,
        "declared_income_annual": income,
        "deposits_total": deposits,
        "deposits_count": deposits_count,
        "withdrawals_total": withdrawals,
        "withdrawals_count": withdrawals_count,
        "deposit_withdraw_cycle_days_avg": round(cycle_days, 1),
        "deposits_vs_income_ratio": round(deposits / income, 2) if income else 0.0,
        "kyc_face_match_score": round(face, 2),
        "account_age_days": age,
        "vpn_usage_pct": round(vpn, 1),
        "countries_accessed_count": countries,
        "device_shared_count": devices,
        "ip_shared_count": ips,
    }


def _cycling(rng, acc):
    income = _money(rng, 22_000, 55_000)
    n = rng.randint(18, 60)
    return _row(rng, acc, income=income, deposits=round(income * rng.uniform(2.8, 7.0), 2),
                share_withdrawn=rng.uniform(0.9, 0.99), deposits_count=n, withdrawals_count=n + rng.randint(-3, 6),
                cycle_days=rng.uniform(0.4, 2.5), face=rng.uniform(0.82, 0.97), age=rng.randint(25, 420),
                vpn=rng.uniform(0, 25), countries=rng.randint(1, 2), devices=rng.randint(0, 1), ips=rng.randint(0, 2))


def _mule(rng, acc):
    income = _money(rng, 15_000, 35_000)
    n = rng.randint(8, 30)
    return _row(rng, acc, income=income, deposits=round(income * rng.uniform(1.2, 3.5), 2),
                share_withdrawn=rng.uniform(0.85, 0.98), deposits_count=n, withdrawals_count=n + rng.randint(0, 8),
                cycle_days=rng.uniform(1.0, 6.0), face=rng.uniform(0.78, 0.95), age=rng.randint(15, 150),
                vpn=rng.uniform(0, 35), countries=rng.randint(1, 3), devices=rng.randint(4, 9), ips=rng.randint(5, 14))


def _synthetic(rng, acc):
    income = _money(rng, 60_000, 140_000)  # synthetic identities declare generous incomes
    n = rng.randint(3, 12)
    return _row(rng, acc, income=income, deposits=round(income * rng.uniform(0.2, 1.6), 2),
                share_withdrawn=rng.uniform(0.6, 0.95), deposits_count=n, withdrawals_count=n + rng.randint(0, 4),
                cycle_days=rng.uniform(2.0, 8.0), face=rng.uniform(0.28, 0.58), age=rng.randint(2, 28),
                vpn=rng.uniform(15, 65), countries=rng.randint(1, 4), devices=rng.randint(0, 3), ips=rng.randint(0, 4))


def _vpn_hopping(rng, acc):
    income = _money(rng, 30_000, 90_000)
    n = rng.randint(6, 25)
    return _row(rng, acc, income=income, deposits=round(income * rng.uniform(0.8, 2.8), 2),
                share_withdrawn=rng.uniform(0.7, 0.97), deposits_count=n, withdrawals_count=n + rng.randint(0, 10),
                cycle_days=rng.uniform(2.0, 9.0), face=rng.uniform(0.7, 0.93), age=rng.randint(30, 700),
                vpn=rng.uniform(78, 100), countries=rng.randint(9, 22), devices=rng.randint(0, 2), ips=rng.randint(1, 5))


def _traveller(rng, acc):
    income = _money(rng, 70_000, 220_000)
    return _row(rng, acc, income=income, deposits=round(income * rng.uniform(0.4, 1.0), 2),
                share_withdrawn=rng.uniform(0.5, 0.9), deposits_count=rng.randint(12, 30),
                withdrawals_count=rng.randint(20, 80), cycle_days=rng.uniform(12, 40), face=rng.uniform(0.86, 0.99),
                age=rng.randint(700, 4000), vpn=rng.uniform(0, 15), countries=rng.randint(8, 19),
                devices=rng.randint(0, 1), ips=rng.randint(0, 3))


def _household(rng, acc):
    income = _money(rng, 30_000, 80_000)
    return _row(rng, acc, income=income, deposits=round(income * rng.uniform(0.6, 1.1), 2),
                share_withdrawn=rng.uniform(0.6, 0.95), deposits_count=rng.randint(12, 26),
                withdrawals_count=rng.randint(25, 90), cycle_days=rng.uniform(10, 30), face=rng.uniform(0.84, 0.98),
                age=rng.randint(300, 3000), vpn=rng.uniform(0, 10), countries=rng.randint(1, 3),
                devices=rng.randint(1, 2), ips=rng.randint(2, 3))


def _high_earner(rng, acc):
    income = _money(rng, 250_000, 900_000)
    return _row(rng, acc, income=income, deposits=round(income * rng.uniform(0.7, 1.4), 2),
                share_withdrawn=rng.uniform(0.55, 0.85), deposits_count=rng.randint(12, 40),
                withdrawals_count=rng.randint(15, 60), cycle_days=rng.uniform(15, 45), face=rng.uniform(0.85, 0.99),
                age=rng.randint(400, 5000), vpn=rng.uniform(0, 20), countries=rng.randint(2, 6),
                devices=rng.randint(0, 1), ips=rng.randint(0, 2))


def _vpn_user(rng, acc):
    income = _money(rng, 40_000, 120_000)
    return _row(rng, acc, income=income, deposits=round(income * rng.uniform(0.6, 1.1), 2),
                share_withdrawn=rng.uniform(0.5, 0.9), deposits_count=rng.randint(12, 26),
                withdrawals_count=rng.randint(20, 60), cycle_days=rng.uniform(12, 35), face=rng.uniform(0.85, 0.99),
                age=rng.randint(200, 3000), vpn=rng.uniform(85, 100), countries=rng.randint(1, 3),
                devices=rng.randint(0, 1), ips=rng.randint(0, 3))


def _new_honest(rng, acc):
    income = _money(rng, 25_000, 90_000)
    n = rng.randint(1, 3)
    return _row(rng, acc, income=income, deposits=round(income * rng.uniform(0.02, 0.15), 2),
                share_withdrawn=rng.uniform(0.0, 0.5), deposits_count=n, withdrawals_count=rng.randint(0, 2),
                cycle_days=rng.uniform(3, 20), face=rng.uniform(0.86, 0.99), age=rng.randint(1, 14),
                vpn=rng.uniform(0, 20), countries=1, devices=rng.randint(0, 1), ips=rng.randint(0, 2))


def _clean(rng, acc):
    income = _money(rng, 24_000, 110_000)
    return _row(rng, acc, income=income, deposits=round(income * rng.uniform(0.5, 1.05), 2),
                share_withdrawn=rng.uniform(0.55, 0.95), deposits_count=rng.randint(10, 26),
                withdrawals_count=rng.randint(20, 90), cycle_days=rng.uniform(9, 30), face=rng.uniform(0.83, 0.99),
                age=rng.randint(180, 4000), vpn=rng.uniform(0, 12), countries=rng.randint(1, 3),
                devices=rng.randint(0, 1), ips=rng.randint(0, 2))


ARCHETYPES = {
    # fraud
    "deposit_withdraw_cycling": (_cycling, 6),
    "mule_network": (_mule, 5),
    "synthetic_identity": (_synthetic, 5),
    "vpn_hopping": (_vpn_hopping, 4),
    # hard negatives
    "frequent_traveller": (_traveller, 3),
    "household_sharing": (_household, 3),
    "high_earner": (_high_earner, 3),
    "vpn_user": (_vpn_user, 3),
    "new_honest_customer": (_new_honest, 3),
    # ordinary
    "clean": (_clean, 15),
}
FRAUD_ARCHETYPES = frozenset({"deposit_withdraw_cycling", "mule_network", "synthetic_identity", "vpn_hopping"})

# Which demo alerts are decided: (archetype, index within it) -> outcome, reason, pattern.
_DECISIONS: dict[tuple[str, int], tuple[str, str, dict]] = {
    ("deposit_withdraw_cycling", 0): ("confirmed_fraud", "Salary-sized deposits leave within a day, every week.", {
        "key_signals": ["deposits several times declared income", "withdrawn within two days",
                        "over 90% passed through"],
        "behavioral_pattern": "Deposit-withdraw cycling: funds arrive in many mid-sized deposits and leave within "
                              "a day or two, far beyond the declared income.",
        "final_outcome": "Confirmed Fraud",
        "one_sentence_description": "A low-income account used as a pass-through for money several times its "
                                    "declared income.",
    }),
    ("deposit_withdraw_cycling", 1): ("confirmed_fraud", "Cycling confirmed with the bank; funds from scam victims.", {
        "key_signals": ["fast deposit-withdraw cycle", "deposits far beyond income"],
        "behavioral_pattern": "Deposit-withdraw cycling of scam proceeds.",
        "final_outcome": "Confirmed Fraud",
        "one_sentence_description": "Scam proceeds laundered through rapid deposits and withdrawals.",
    }),
    ("mule_network", 0): ("confirmed_fraud", "Device shared with six accounts already closed as mules.", {
        "key_signals": ["device shared with many accounts", "IP shared with many accounts", "money passes through"],
        "behavioral_pattern": "Money mule ring: several accounts operated from the same devices and IP addresses, "
                              "each passing funds on within days.",
        "final_outcome": "Confirmed Fraud",
        "one_sentence_description": "One of a ring of mule accounts run from shared devices.",
    }),
    ("mule_network", 1): ("confirmed_fraud", "Part of the same mule ring as earlier cases.", {
        "key_signals": ["shared device", "shared IP", "pass-through deposits"],
        "behavioral_pattern": "Mule network sharing devices and IP addresses.",
        "final_outcome": "Confirmed Fraud",
        "one_sentence_description": "A mule account in a device-sharing ring.",
    }),
    ("synthetic_identity", 0): ("confirmed_fraud", "Document photo does not match; identity details fabricated.", {
        "key_signals": ["face match below 0.6", "account under a month old", "high declared income"],
        "behavioral_pattern": "Synthetic identity: a new account opened with a poor face match and a generous "
                              "declared income, quickly moving money.",
        "final_outcome": "Confirmed Fraud",
        "one_sentence_description": "A synthetic identity that failed face matching and moved money within weeks.",
    }),
    ("synthetic_identity", 1): ("confirmed_fraud", "Identity document reported stolen.", {
        "key_signals": ["poor face match", "brand-new account"],
        "behavioral_pattern": "Borrowed identity on a new account.",
        "final_outcome": "Confirmed Fraud",
        "one_sentence_description": "A stolen identity document used to open a new account.",
    }),
    ("vpn_hopping", 0): ("confirmed_fraud", "Account takeover: logins rotate through VPN exits in 15 countries.", {
        "key_signals": ["VPN on almost every session", "access from many countries"],
        "behavioral_pattern": "Account takeover hidden behind VPN exits that hop between countries.",
        "final_outcome": "Confirmed Fraud",
        "one_sentence_description": "A taken-over account accessed through VPNs across many countries.",
    }),
    ("frequent_traveller", 0): ("legit", "Customer is a flight attendant; travel matches her roster.", {
        "key_signals": ["many countries", "no VPN", "long-standing account"],
        "behavioral_pattern": "Frequent traveller: many countries, ordinary money movement.",
        "final_outcome": "Marked Legit",
        "one_sentence_description": "A frequent traveller whose country count alone raised the alert.",
    }),
    ("high_earner", 0): ("legit", "Deposits are a documented bonus and a property sale.", {
        "key_signals": ["large deposits", "deposits in line with income"],
        "behavioral_pattern": "High earner with large but explained deposits.",
        "final_outcome": "Marked Legit",
        "one_sentence_description": "A high earner whose large deposits match the declared income.",
    }),
    ("household_sharing", 0): ("false_positive", "Two spouses and a teenager on one tablet and home Wi-Fi.", {
        "key_signals": ["device shared with family", "home IP shared"],
        "behavioral_pattern": "Household sharing a device and an IP address.",
        "final_outcome": "False Positive",
        "one_sentence_description": "A family sharing a tablet and home internet, not a mule network.",
    }),
}


def demo_alerts(seed: int = DEMO_SEED) -> list[DemoAlert]:
    """The demo alerts in a stable, shuffled order (so the queue mixes patterns)."""
    rng = random.Random(seed)
    items: list[tuple[str, int]] = [(name, i) for name, (_, count) in ARCHETYPES.items() for i in range(count)]
    rng.shuffle(items)
    alerts = []
    for number, (archetype, index) in enumerate(items):
        make, _ = ARCHETYPES[archetype]
        row = make(rng, f"ACC-{1001 + number}")
        alerts.append(DemoAlert(archetype, row, _DECISIONS.get((archetype, index))))
    return alerts


def write_demo_csv(path: Path = DEMO_CSV) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for alert in demo_alerts():
            writer.writerow(alert.row)
    return path


if __name__ == "__main__":
    print(f"Wrote {write_demo_csv()}")
