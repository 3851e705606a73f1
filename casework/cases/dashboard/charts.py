"""The figures as the charts read them (static/js/dashboard.js, through json_script)."""

from __future__ import annotations


def _pairs(pairs) -> dict:
    return {"labels": [label for label, _ in pairs], "values": [value for _, value in pairs]}


def chart_data(figures: dict) -> dict:
    open_cases = figures["open"]
    ttd = figures["time_to_decision"]
    return {
        "by_type": _pairs(open_cases["by_type"]),
        "by_status": _pairs(open_cases["by_status"]),
        "by_priority": _pairs(open_cases["by_priority"]),
        "ages": _pairs(open_cases["ages"]),
        "per_day": figures["per_day"],
        "breaches": _pairs(open_cases["breached_by_type"]),
        "time_to_decision": {"labels": [row["type"] for row in ttd], "median": [row["median"] for row in ttd],
                             "p90": [row["p90"] for row in ttd]},
        "agents": {key: figures["agents"][key] for key in ("labels", "error_rate", "cost_per_case")},
    }
