"""A second labelled set, written from fraud typologies rather than from the analysts' rules.

    python tests/fraud/data/make_typologies.py

Writes typology_alerts.csv (random.Random(4242), 200 rows). Unlike make_labelled.py, whose
ranges were drawn up beside the offline rules (and sit at their cut-offs), this set was
written from the patterns seed 000 and public anti-money-laundering typologies describe
(FATF/Europol money-mule guidance, FinCEN advisories on synthetic identities and account
takeover), with ranges chosen before looking at any rule, and never used to tune one:

- mule rings: several accounts run from shared devices, money passed on within days;
- cycling (pass-through, rapid movement of funds): deposits far above declared income leave
  again almost at once;
- synthetic identities: a new account whose selfie barely matches the document, then used;
- account takeover: an established, honest-looking account suddenly reached through VPNs
  from new countries and emptied quickly (the profile has a good face match: the victim's);
each in a clear and a subtle form (weaker values, spread over more dimensions), beside honest
customers and honest look-alikes (payroll-like pass-through, families, expats, students).

Same columns and conventions as make_labelled.py.
"""

from __future__ import annotations

import csv
import math
import random
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
FEATURES = (
    "declared_income_annual", "deposits_total", "deposits_count", "withdrawals_total", "withdrawals_count",
    "deposit_withdraw_cycle_days_avg", "deposits_vs_income_ratio", "kyc_face_match_score", "account_age_days",
    "vpn_usage_pct", "countries_accessed_count", "device_shared_count", "ip_shared_count",
)
COLUMNS = ("account_id", *FEATURES, "label", "scenario")


def _customer(rng: random.Random) -> dict:
    """An honest retail customer: income, spending and access habits with ordinary spread."""
    income = round(min(400_000, max(12_000, rng.lognormvariate(math.log(48_000), 0.6))), -2)
    return {
        "income": income,
        "ratio": rng.triangular(0.3, 1.5, 0.9),
        "passthrough": rng.triangular(0.4, 1.0, 0.85),
        "cycle": rng.triangular(6, 60, 20),
        "deposits_count": rng.randint(10, 70),
        "withdrawals_count": rng.randint(15, 180),
        "face": rng.triangular(0.74, 0.99, 0.91),
        "age": rng.randint(60, 4000),
        "vpn": rng.choice([0, 0, 0, 2, 5, 8, 12, 20]) + rng.uniform(0, 3),
        "countries": rng.choices([1, 2, 3, 4, 5], weights=[45, 30, 15, 7, 3])[0],
        "devices": rng.choices([0, 1, 2], weights=[75, 20, 5])[0],
        "ips": rng.choices([0, 1, 2, 3], weights=[55, 30, 10, 5])[0],
    }


# -- fraud (typologies) -------------------------------------------------------------------


def mule_ring(rng):
    return {"devices": rng.randint(4, 12), "ips": rng.randint(3, 15), "cycle": rng.uniform(0.5, 3),
            "ratio": rng.uniform(2, 8), "passthrough": rng.uniform(0.9, 0.99), "age": rng.randint(15, 300),
            "vpn": rng.uniform(20, 80)}


def mule_ring_subtle(rng):
    """Recruited mules on their own phones: a small shared-device footprint, money passed on weekly."""
    return {"devices": rng.randint(2, 4), "ips": rng.randint(2, 6), "cycle": rng.uniform(3, 9),
            "ratio": rng.uniform(1.4, 3), "passthrough": rng.uniform(0.85, 0.97), "vpn": rng.uniform(10, 45)}


def cycling(rng):
    return {"cycle": rng.uniform(0.3, 2.5), "ratio": rng.uniform(3, 15), "passthrough": rng.uniform(0.93, 0.995),
            "deposits_count": rng.randint(30, 250), "withdrawals_count": rng.randint(30, 250)}


def cycling_subtle(rng):
    """Structured to look ordinary: a few days' hold, a little over twice the income."""
    return {"cycle": rng.uniform(2.5, 7), "ratio": rng.uniform(1.8, 3.2), "passthrough": rng.uniform(0.85, 0.96),
            "deposits_count": rng.randint(20, 90)}


def synthetic_identity(rng):
    return {"face": rng.uniform(0.2, 0.55), "age": rng.randint(1, 45), "ratio": rng.uniform(1.5, 5),
            "cycle": rng.uniform(1, 6), "passthrough": rng.uniform(0.85, 0.99)}


def synthetic_identity_subtle(rng):
    """A better fake: the selfie nearly passes; the account is a few weeks old and a little busy."""
    return {"face": rng.uniform(0.6, 0.76), "age": rng.randint(5, 75), "ratio": rng.uniform(1.2, 2.5),
            "cycle": rng.uniform(3, 10), "vpn": rng.uniform(15, 50), "devices": rng.randint(1, 3)}


def account_takeover(rng):
    return {"age": rng.randint(400, 4000), "vpn": rng.uniform(60, 100), "countries": rng.randint(5, 14),
            "cycle": rng.uniform(0.3, 2), "passthrough": rng.uniform(0.9, 1.0), "ips": rng.randint(2, 8)}


def account_takeover_subtle(rng):
    """Taken over from one foreign location, drained over a few days."""
    return {"age": rng.randint(300, 3000), "vpn": rng.uniform(30, 70), "countries": rng.randint(3, 6),
            "cycle": rng.uniform(1.5, 5), "passthrough": rng.uniform(0.88, 0.99), "ips": rng.randint(1, 4)}


# -- honest look-alikes ---------------------------------------------------------------------


def honest(rng):
    return {}


def payroll_passthrough(rng):
    """Salary in, rent and bills out within days: fast, but at the declared income."""
    return {"cycle": rng.uniform(2, 6), "ratio": rng.uniform(0.8, 1.3), "passthrough": rng.uniform(0.9, 0.99)}


def family_shared_devices(rng):
    return {"devices": rng.randint(2, 4), "ips": rng.randint(2, 4), "vpn": rng.uniform(0, 25)}


def expat_traveller(rng):
    return {"countries": rng.randint(5, 15), "vpn": rng.uniform(10, 45), "age": rng.randint(200, 3000)}


def student_new_account(rng):
    return {"age": rng.randint(3, 60), "income": round(rng.uniform(6_000, 20_000), -2),
            "face": rng.uniform(0.72, 0.9), "ips": rng.randint(3, 20), "ratio": rng.uniform(0.5, 1.6)}


def windfall(rng):
    """An inheritance or a house sale: deposits far above income, but they stay."""
    return {"ratio": rng.uniform(3, 12), "cycle": rng.uniform(20, 120), "passthrough": rng.uniform(0.1, 0.5)}


# (scenario, label, rows)
SCENARIOS: tuple[tuple[Callable[[random.Random], dict], str, int], ...] = (
    (mule_ring, "fraud", 10),
    (mule_ring_subtle, "fraud", 12),
    (cycling, "fraud", 10),
    (cycling_subtle, "fraud", 12),
    (synthetic_identity, "fraud", 10),
    (synthetic_identity_subtle, "fraud", 12),
    (account_takeover, "fraud", 8),
    (account_takeover_subtle, "fraud", 10),
    (honest, "legit", 50),
    (payroll_passthrough, "legit", 14),
    (family_shared_devices, "legit", 14),
    (expat_traveller, "legit", 14),
    (student_new_account, "legit", 12),
    (windfall, "legit", 12),
)


def make_row(rng: random.Random, scenario: Callable[[random.Random], dict]) -> dict:
    raw = _customer(rng) | scenario(rng)
    income = raw["income"]
    deposits = round(income * raw["ratio"], 2)
    return {
        "declared_income_annual": income,
        "deposits_total": deposits,
        "deposits_count": raw["deposits_count"],
        "withdrawals_total": round(deposits * min(1.0, raw["passthrough"]), 2),
        "withdrawals_count": raw["withdrawals_count"],
        "deposit_withdraw_cycle_days_avg": round(raw["cycle"], 1),
        "deposits_vs_income_ratio": round(deposits / income, 2),
        "kyc_face_match_score": round(min(1.0, raw["face"]), 2),
        "account_age_days": raw["age"],
        "vpn_usage_pct": round(min(100.0, raw["vpn"]), 1),
        "countries_accessed_count": raw["countries"],
        "device_shared_count": raw["devices"],
        "ip_shared_count": raw["ips"],
    }


def generate(seed: int = 4242) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for scenario, label, count in SCENARIOS:
        for _ in range(count):
            rows.append({"account_id": "", **make_row(rng, scenario), "label": label, "scenario": scenario.__name__})
    rng.shuffle(rows)
    for number, row in enumerate(rows, start=1):
        row["account_id"] = f"TYP-{number:04d}"
    return rows


def main() -> None:
    with (HERE / "typology_alerts.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(generate())


if __name__ == "__main__":
    main()
