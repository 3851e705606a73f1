"""The offline analysts' sentences read as a person would write them.

Every offline analyst runs over the demo data of every case type (and the fraud analysts
over the labelled alert sets as well, which reach every branch of their rules); no sentence
they write may hold a "(s)" plural, a <= / >= threshold, a dict or list repr, a Python
literal, or a snake_case key. Identifiers that are data (a test's name, a help article's id,
an absence record's id) may be quoted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from agents.models import AgentCall
from casework.fraud.agents.offline import run_offline_investigation
from tests.fraud.data.evaluate import SETS, load

# Data an analyst quotes rather than words it chooses.
IDENTIFIERS = re.compile(r"\btest_\w+|\bkb_\d+\b|\b[a-z]+(?:_[a-z]+)*:\d+\b")
FAULTS = {
    "a '(s)' plural": re.compile(r"\w\(s\)"),
    "a <= or >= threshold": re.compile(r"<=|>=|=<|=>"),
    "a dict or set": re.compile(r"[{}]"),
    "a list repr": re.compile(r"\[['\"]|['\"]\]"),
    "a Python literal": re.compile(r"\bNone\b|\b(?:True|False)\b(?! Positive)"),
    "a snake_case key": re.compile(r"\b[A-Za-z]+_[A-Za-z_]+\b"),
}
# Report-filing tools take the analyst's sentences as arguments; the transaction
# investigation's *_tool steps are deterministic analysts whose outputs are its findings.
PROSE_TOOL_INPUTS = {"generate_report", "file_risk_report"}


def prose(value, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, text) for every sentence-like string inside a JSON value."""
    if isinstance(value, str):
        if " " in value.strip() and len(value) > 12:
            yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from prose(item, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value:
            yield from prose(item, f"{path}[]")


def faults_in(text: str) -> list[str]:
    text = IDENTIFIERS.sub("ID", text)
    return [name for name, pattern in FAULTS.items() if pattern.search(text)]


def test_the_checker_catches_what_the_issue_named():
    assert faults_in("6 point(s)") == ["a '(s)' plural"]
    assert faults_in("a device (5) or IP address (5) (both <= 2-3)") == ["a <= or >= threshold"]
    assert "a dict or set" in faults_in("result {'a': 1}")
    assert "a snake_case key" in faults_in("the message is about: billing_error")
    assert faults_in("Failed test test_refund_flow (payments): AssertionError") == []
    assert faults_in("records sick_leave:1 (2026-11-15 to 2026-11-19)") == []


def test_the_fraud_analysts_write_plain_sentences_over_the_labelled_sets():
    bad: dict[str, str] = {}
    for name in ("labelled", "typologies"):
        for row in load(SETS[name]):
            results = run_offline_investigation(row, similar_confirmed_cases_count_from_system=1,
                                                known_fraud_links_from_system=int(row.get("device_shared_count")
                                                                                  or 0) % 3)
            for agent, output in results.items():
                for path, text in prose(output):
                    for fault in faults_in(text):
                        bad.setdefault(f"{agent}{path}: {fault}", text)
    assert not bad, "\n".join(f"{k}\n    {v}" for k, v in list(bad.items())[:10])


@pytest.mark.django_db(transaction=True)
def test_every_offline_analyst_writes_plain_sentences_over_the_demo_data():
    from tests.demo_snapshot import demo_loaded

    demo_loaded()
    calls = AgentCall.objects.only("kind", "name", "input", "output")
    names = set()
    bad: dict[str, str] = {}
    for call in calls.iterator():
        if call.kind == AgentCall.Kind.AGENT:
            blobs = [call.output]
        elif call.name in PROSE_TOOL_INPUTS:
            blobs = [call.input]
        elif call.name.endswith("_tool"):
            blobs = [call.output]
        else:
            continue
        names.add(call.name)
        for blob in blobs:
            for path, text in prose(blob):
                for fault in faults_in(text):
                    bad.setdefault(f"{call.name}{path}: {fault}", text)
    # Every case type's analysts spoke.
    assert {"orchestrator", "support_supervisor", "access_advisory", "detective", "txn_planner"} <= names
    assert not bad, "\n".join(f"{k}\n    {v}" for k, v in list(bad.items())[:10])
