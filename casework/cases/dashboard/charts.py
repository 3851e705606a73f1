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


# Each chart on the page: its canvas id, its series in chart_data, how dashboard.js draws it, its
# caption and accessible name, and the column headings of its table (the first names the rows).
# The same figures go out twice: as JSON for the canvas, and as a table under "Show as table"
# for people who do not see the chart (issue 31).
CHARTS = [
    ("chart-by-type", "by_type", "bar", "Open cases by type", "Open cases by type", False,
     ["Type", "Open cases"]),
    ("chart-by-status", "by_status", "bar", "Open cases by status", "Open cases by status", False,
     ["Status", "Open cases"]),
    ("chart-by-priority", "by_priority", "priority", "Open cases by priority", "Open cases by priority", False,
     ["Priority", "Open cases"]),
    ("chart-ages", "ages", "bar", "Age of open cases", "Age of open cases in buckets", False,
     ["Age", "Open cases"]),
    ("chart-breaches", "breaches", "bar", "Open cases past their deadline, by type",
     "Open cases past their deadline by type", False, ["Type", "Past their deadline"]),
    ("chart-ttd", "time_to_decision", "ttd", "Hours to decision per type (median, p90)",
     "Median and p90 hours to decision per type", False, ["Type", "Median (hours)", "p90 (hours)"]),
    ("chart-per-day", "per_day", "per_day", "Cases opened, decided and breached per day",
     "Cases opened, decided and past their deadline per day", True,
     ["Day (UTC)", "Opened", "Decided", "Past their deadline"]),
    ("chart-agents", "agents", "agents", "Agent calls failed (%) and LLM cost per case ($) per day",
     "Agent error rate and LLM cost per case per day", True,
     ["Day (UTC)", "Agent calls failed (%)", "LLM cost per case ($)"]),
]

# Which series of each chart's data are its table's columns, after the labels.
_SERIES = {"per_day": ("opened", "decided", "breached"), "ttd": ("median", "p90"),
           "agents": ("error_rate", "cost_per_case")}


def _cell(value) -> str:
    return "–" if value is None else str(value)


def chart_tables(data: dict) -> list[dict]:
    """The charts in page order, each with the rows of its table (a row per label)."""
    charts = []
    for canvas_id, key, kind, caption, label, wide, columns in CHARTS:
        series = data[key]
        values = [series[name] for name in _SERIES.get(kind, ("values",))]
        rows = [[series_label, *(_cell(column[i]) for column in values)]
                for i, series_label in enumerate(series["labels"])]
        charts.append({"id": canvas_id, "key": key, "kind": kind, "caption": caption, "label": label, "wide": wide,
                       "columns": columns, "rows": rows})
    return charts
