"""Generate the labelled fraud alerts the offline analysts are measured on, and a tuning set.

    python tests/fraud/data/make_labelled.py

Writes labelled_alerts.csv (random.Random(2026), 120 rows: the measurement set, never used
to tune) and tuning_alerts.csv (random.Random(7), 240 rows, same scenarios: the set the rule
weights were tuned on). Deterministic: running it again writes the same files.

Scenario names say what each row is meant to be. Feature conventions: the window is one year
(deposits_vs_income_ratio = deposits_total / declared_income_annual), vpn_usage_pct is 0-100,
kyc_face_match_score 0-1, device_shared_count / ip_shared_count count the *other* accounts seen
on this account's devices / IP addresses.
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


def _clean(rng: random.Random) -> dict:
    """An ordinary account, with the everyday noise honest customers show."""
    income = min(250_000, max(18_000, round(rng.lognormvariate(math.log(55_000), 0.45), -2)))
    row = {
        "declared_income_annual": income,
        "ratio": rng.uniform(1.3, 1.6) if rng.random() < 0.1 else rng.uniform(0.35, 1.3),
        "passthrough": rng.uniform(0.55, 0.97),
        "deposit_withdraw_cycle_days_avg": rng.uniform(7, 10) if rng.random() < 0.15 else rng.uniform(10, 45),
        "deposits_count": rng.randint(12, 60),
        "withdrawals_count": rng.randint(20, 150),
        "kyc_face_match_score": rng.uniform(0.72, 0.82) if rng.random() < 0.1 else rng.uniform(0.82, 0.99),
        "account_age_days": rng.randint(120, 3500),
        "vpn_usage_pct": rng.uniform(0, 5) if rng.random() < 0.7 else rng.uniform(5, 15),
        "countries_accessed_count": rng.choices([1, 2, 3, 4], weights=[50, 30, 15, 5])[0],
        "device_shared_count": rng.choices([0, 1], weights=[80, 20])[0],
        "ip_shared_count": rng.choices([0, 1, 2], weights=[60, 30, 10])[0],
    }
    # Everyday quirks, each on its own and sometimes two at once: honest accounts are not spotless.
    if rng.random() < 0.08:
        row["vpn_usage_pct"] = rng.uniform(15, 40)
    if rng.random() < 0.10:
        row["countries_accessed_count"] = rng.randint(3, 6)
    if rng.random() < 0.10:
        row["device_shared_count"], row["ip_shared_count"] = rng.randint(1, 2), rng.randint(1, 3)
    if rng.random() < 0.10:
        row["account_age_days"] = rng.randint(30, 120)
    if rng.random() < 0.10:
        row["deposit_withdraw_cycle_days_avg"] = rng.uniform(5, 10)
    if rng.random() < 0.10:
        row["ratio"] = rng.uniform(1.3, 1.9)
    return row


def _one_of(rng: random.Random, *options: dict) -> dict:
    return rng.choice(options)


# -- fraud --------------------------------------------------------------------------------


def clear_cycling(rng):
    return {"deposit_withdraw_cycle_days_avg": rng.uniform(0.4, 2.0), "ratio": rng.uniform(4, 12),
            "passthrough": rng.uniform(0.92, 0.995), "deposits_count": rng.randint(40, 200),
            "withdrawals_count": rng.randint(40, 200)}


def clear_mule_network(rng):
    return {"device_shared_count": rng.randint(5, 14), "ip_shared_count": rng.randint(4, 20),
            "vpn_usage_pct": rng.uniform(40, 95), "countries_accessed_count": rng.randint(1, 6),
            "deposit_withdraw_cycle_days_avg": rng.uniform(0.8, 4), "ratio": rng.uniform(1.5, 6),
            "passthrough": rng.uniform(0.9, 0.99), "account_age_days": rng.randint(10, 200)}


def clear_synthetic_identity(rng):
    row = {"kyc_face_match_score": rng.uniform(0.15, 0.5), "account_age_days": rng.randint(2, 40)}
    row |= _one_of(
        rng,
        {"vpn_usage_pct": rng.uniform(40, 90), "countries_accessed_count": rng.randint(2, 5)},
        {"ratio": rng.uniform(2, 6), "deposit_withdraw_cycle_days_avg": rng.uniform(2, 8),
         "passthrough": rng.uniform(0.88, 0.99)},
        {"device_shared_count": rng.randint(3, 6), "ip_shared_count": rng.randint(2, 6)},
    )
    return row


def clear_vpn_hopping(rng):
    row = {"vpn_usage_pct": rng.uniform(70, 100), "countries_accessed_count": rng.randint(7, 20)}
    row |= _one_of(
        rng,
        {"deposit_withdraw_cycle_days_avg": rng.uniform(1, 5), "ratio": rng.uniform(1.5, 4),
         "passthrough": rng.uniform(0.9, 0.99)},
        {"kyc_face_match_score": rng.uniform(0.6, 0.78), "account_age_days": rng.randint(5, 60)},
        {"device_shared_count": rng.randint(2, 5), "ip_shared_count": rng.randint(2, 6)},
    )
    return row


def subtle_cycling(rng):
    return {"deposit_withdraw_cycle_days_avg": rng.uniform(3, 6), "ratio": rng.uniform(2, 4),
            "passthrough": rng.uniform(0.85, 0.97)}


def subtle_mule_ring(rng):
    return {"device_shared_count": rng.randint(3, 4), "ip_shared_count": rng.randint(2, 5),
            "vpn_usage_pct": rng.uniform(35, 70), "countries_accessed_count": rng.randint(1, 4),
            "deposit_withdraw_cycle_days_avg": rng.uniform(5, 12), "ratio": rng.uniform(0.9, 2.2),
            "passthrough": rng.uniform(0.85, 0.98), "account_age_days": rng.randint(30, 400)}


def subtle_borderline_identity(rng):
    row = {"kyc_face_match_score": rng.uniform(0.55, 0.70), "account_age_days": rng.randint(3, 40)}
    row |= _one_of(
        rng,
        {"vpn_usage_pct": rng.uniform(35, 65), "countries_accessed_count": rng.randint(1, 3)},
        {"device_shared_count": rng.randint(3, 4), "ip_shared_count": rng.randint(1, 3)},
        {"deposit_withdraw_cycle_days_avg": rng.uniform(4, 7), "ratio": rng.uniform(1.6, 2.6),
         "passthrough": rng.uniform(0.85, 0.97)},
    )
    return row


def edge_lone_vpn_hopper(rng):
    """Fraud visible in one dimension only: expected to be missed by a corroboration rule."""
    return {"vpn_usage_pct": rng.uniform(75, 100), "countries_accessed_count": rng.randint(6, 15)}


# -- legitimate ---------------------------------------------------------------------------


def clean(rng):
    return {}


def hn_frequent_traveller(rng):
    return {"countries_accessed_count": rng.randint(6, 18), "vpn_usage_pct": rng.uniform(0, 12)}


def hn_household(rng):
    return {"device_shared_count": rng.randint(2, 3), "ip_shared_count": rng.randint(2, 3)}


def hn_high_earner(rng):
    return {"declared_income_annual": round(rng.uniform(200_000, 900_000), -3), "ratio": rng.uniform(0.8, 1.8),
            "deposit_withdraw_cycle_days_avg": rng.uniform(7, 40), "passthrough": rng.uniform(0.6, 0.98),
            "deposits_count": rng.randint(12, 80)}


def hn_privacy_vpn(rng):
    return {"vpn_usage_pct": rng.uniform(60, 100), "countries_accessed_count": rng.randint(1, 3)}


def hn_new_customer(rng):
    return {"account_age_days": rng.randint(1, 30), "kyc_face_match_score": rng.uniform(0.85, 0.99),
            "ratio": rng.uniform(0.02, 0.3), "deposits_count": rng.randint(1, 6),
            "withdrawals_count": rng.randint(0, 10)}


def hn_gig_worker(rng):
    return {"deposit_withdraw_cycle_days_avg": rng.uniform(3, 7), "ratio": rng.uniform(0.7, 1.4),
            "passthrough": rng.uniform(0.9, 0.99), "deposits_count": rng.randint(50, 200)}


def hn_business_traveller_vpn(rng):
    return {"vpn_usage_pct": rng.uniform(20, 50), "countries_accessed_count": rng.randint(5, 10)}


def hn_campus_shared_ip(rng):
    return {"ip_shared_count": rng.randint(8, 30), "device_shared_count": rng.randint(0, 1),
            "account_age_days": rng.randint(30, 800), "declared_income_annual": round(rng.uniform(8_000, 25_000), -2)}


def edge_household_vpn(rng):
    """Honest, but two independent medium signals: expected to be flagged by a corroboration rule."""
    return {"device_shared_count": rng.randint(2, 3), "ip_shared_count": rng.randint(2, 3),
            "vpn_usage_pct": rng.uniform(60, 95)}


# (scenario, label, rows in the labelled set of 120); the tuning set has twice as many.
SCENARIOS: tuple[tuple[Callable[[random.Random], dict], str, int], ...] = (
    (clear_cycling, "fraud", 7),
    (clear_mule_network, "fraud", 7),
    (clear_synthetic_identity, "fraud", 6),
    (clear_vpn_hopping, "fraud", 5),
    (subtle_cycling, "fraud", 8),
    (subtle_mule_ring, "fraud", 8),
    (subtle_borderline_identity, "fraud", 7),
    (edge_lone_vpn_hopper, "fraud", 2),
    (clean, "legit", 20),
    (hn_frequent_traveller, "legit", 7),
    (hn_household, "legit", 7),
    (hn_high_earner, "legit", 7),
    (hn_privacy_vpn, "legit", 7),
    (hn_new_customer, "legit", 7),
    (hn_gig_worker, "legit", 5),
    (hn_business_traveller_vpn, "legit", 4),
    (hn_campus_shared_ip, "legit", 4),
    (edge_household_vpn, "legit", 2),
)


def make_row(rng: random.Random, scenario: Callable[[random.Random], dict]) -> dict:
    raw = _clean(rng) | scenario(rng)
    income = raw["declared_income_annual"]
    deposits = round(income * raw.pop("ratio"), 2)
    return {
        "declared_income_annual": income,
        "deposits_total": deposits,
        "deposits_count": raw["deposits_count"],
        "withdrawals_total": round(deposits * raw.pop("passthrough"), 2),
        "withdrawals_count": raw["withdrawals_count"],
        "deposit_withdraw_cycle_days_avg": round(raw["deposit_withdraw_cycle_days_avg"], 1),
        "deposits_vs_income_ratio": round(deposits / income, 2),
        "kyc_face_match_score": round(raw["kyc_face_match_score"], 2),
        "account_age_days": raw["account_age_days"],
        "vpn_usage_pct": round(raw["vpn_usage_pct"], 1),
        "countries_accessed_count": raw["countries_accessed_count"],
        "device_shared_count": raw["device_shared_count"],
        "ip_shared_count": raw["ip_shared_count"],
    }


def generate(seed: int, scale: int, prefix: str) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for scenario, label, count in SCENARIOS:
        for _ in range(count * scale):
            rows.append({"account_id": "", **make_row(rng, scenario), "label": label,
                         "scenario": scenario.__name__})
    rng.shuffle(rows)
    for number, row in enumerate(rows, start=1):
        row["account_id"] = f"{prefix}-{number:04d}"
    return rows


def write(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main() -> None:
    write(HERE / "labelled_alerts.csv", generate(2026, 1, "LBL"))
    write(HERE / "tuning_alerts.csv", generate(7, 2, "TUN"))


if __name__ == "__main__":
    main()
