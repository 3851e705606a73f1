"""Severity rules (seed 004, "Expected Behavior"), with thresholds from settings:

- high: a failed test that is critical or in a critical area (RELEASE_CRITICAL_AREAS); an
  error rate at or above RELEASE_ERROR_RATE_HIGH; a p95 at or above RELEASE_P95_HIGH_MS; a
  risky change (one naming a RELEASE_RISKY_CHANGES word as a whole word, or its plural:
  payment, auth, authentication, security, migration, schema ...; "auth" in "AUTHORS" is no
  such word) together with failing tests or an elevated error rate; or no summary at all;
- medium: other test failures, an error rate at or above RELEASE_ERROR_RATE_MEDIUM, a p95 at
  or above RELEASE_P95_MEDIUM_MS, a risky change on its own, or missing data;
- low: all tests passing, clean metrics, low-impact changes.
Every finding quotes tool data (names, messages, numbers), nothing else. The same rules are
the floor under what any model files (casework.releases.services.severity_floor).
"""

from __future__ import annotations

import re

from django.conf import settings
from django.template.defaultfilters import pluralize


def _pct(value: float) -> str:
    return f"{value * 100:.2f}%"


def _risky_word(word: str) -> re.Pattern:
    # A whole word (letters and digits; "_" and "-" separate words), or its plural.
    return re.compile(r"(?<![^\W_])" + re.escape(word) + r"(?:s|es)?(?![^\W_])")


def risky_changes(changes: list[str]) -> list[tuple[str, str]]:
    """(change, the risky word it names) for each change naming a RELEASE_RISKY_CHANGES word."""
    patterns = [(w, _risky_word(w)) for w in settings.RELEASE_RISKY_CHANGES]
    return [(c, w) for c in changes for w, pattern in patterns if pattern.search(c.lower())][:10]


def assess(summary: dict | None, details: dict | None, *, summary_error: str = "",
           details_error: str = "") -> tuple[str, list[str], list[str]]:
    """(severity, findings, missing data) from what the tools returned."""
    if summary is None:
        missing = [f"the release summary ({summary_error or 'not read'})"]
        return "high", [f"The release summary could not be read: {summary_error or 'not read'}. Nothing about "
                        "this release could be checked; treat it as high risk until someone has looked."], missing
    high, medium, missing = grade(summary, details, details_error=details_error)
    if high:
        return "high", high + medium, missing
    if medium:
        return "medium", medium, missing
    tests, metrics = summary["tests"], summary["deployment_metrics"]
    clean = (f"All {tests['passed']} tests passed ({tests['skipped']} skipped); error rate "
             f"{_pct(metrics['error_rate'])}, p95 {metrics['response_time_p95']:g} ms; changes: "
             + ("; ".join(summary["changes"][:5]) or "none listed") + ".")
    return "low", [clean], missing


def grade(summary: dict, details: dict | None, *, details_error: str = "") -> tuple[list[str], list[str], list[str]]:
    """What in a release summary (and its test details) makes it high risk, what medium, and
    what data is missing; both lists empty: low."""
    high: list[str] = []
    medium: list[str] = []
    missing: list[str] = []
    tests = summary["tests"]
    failed = tests["failed"]
    total = tests["passed"] + tests["failed"] + tests["skipped"]
    if failed and details is not None:
        failures = [t for t in details["tests"] if t["status"] == "failed"]
        areas = settings.RELEASE_CRITICAL_AREAS
        for t in failures[:8]:
            where = f"{t['name']} ({t['area'] or 'no area'}{', critical' if t['critical'] else ''})"
            text = f"Failed test {where}" + (f": {t['message']}" if t["message"] else "") + "."
            (high if t["critical"] or t["area"].lower() in areas else medium).append(text)
        if not failures:
            medium.append(f"{failed} of {total} tests failed, but the test details list no failed test.")
    elif failed:
        medium.append(f"{failed} of {total} tests failed; their details could not be read"
                      + (f" ({details_error})." if details_error else "."))
        if details_error:
            missing.append(f"the test details ({details_error})")
    metrics = summary["deployment_metrics"]
    error_rate, p95 = metrics.get("error_rate"), metrics.get("response_time_p95")
    if error_rate is None:
        missing.append("the error rate")
    elif error_rate >= settings.RELEASE_ERROR_RATE_HIGH:
        high.append(f"Error rate {_pct(error_rate)} is at or above the high threshold "
                    f"{_pct(settings.RELEASE_ERROR_RATE_HIGH)}.")
    elif error_rate >= settings.RELEASE_ERROR_RATE_MEDIUM:
        medium.append(f"Error rate {_pct(error_rate)} is elevated (medium threshold "
                      f"{_pct(settings.RELEASE_ERROR_RATE_MEDIUM)}).")
    if p95 is None:
        missing.append("the p95 response time")
    elif p95 >= settings.RELEASE_P95_HIGH_MS:
        high.append(f"p95 response time {p95:g} ms is at or above the high threshold {settings.RELEASE_P95_HIGH_MS:g} ms.")
    elif p95 >= settings.RELEASE_P95_MEDIUM_MS:
        medium.append(f"p95 response time {p95:g} ms is degraded (medium threshold {settings.RELEASE_P95_MEDIUM_MS:g} ms).")
    risky = risky_changes(summary["changes"])
    if risky:
        named = "; ".join(f"'{c}' ({w})" for c, w in risky[:5])
        elevated = error_rate is not None and error_rate >= settings.RELEASE_ERROR_RATE_MEDIUM
        if failed or elevated:
            high.append(f"Risky change{pluralize(len(risky[:5]))} {named} ship{pluralize(len(risky[:5]), 's,')} with "
                        + ("failing tests" if failed else f"an error rate of {_pct(error_rate)}") + ".")
        else:
            medium.append(f"Risky change{pluralize(len(risky[:5]))} {named}; tests pass and metrics are clean.")
    if missing:
        medium.append("Missing data: " + "; ".join(missing) + ".")
    return high, medium, missing
