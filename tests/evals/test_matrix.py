"""Comparisons (issue 27, point 6): one command runs a suite against several targets (here the
offline provider and the fake OpenAI-compatible server over real HTTP) and prints the matrix."""

from __future__ import annotations

import json
import re

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command

from agents.evals.matrix import parse_target
from tests.evals.conftest import flush
from tests.fakes.llm_servers import FakeOpenAIServer, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)


def always_high_detective(request: dict):
    """A model that reads the summary, then files every release as high, quoting nothing."""
    contents = [m.get("content") or "" for m in request["messages"]]
    release_id = next(re.search(r'"release_id":\s*"([^"]+)"', c).group(1) for c in contents
                      if isinstance(c, str) and '"release_id"' in c)
    if not any(m["role"] == "tool" for m in request["messages"]):
        return tool_calls(("get_release_summary", {"release_id": release_id}))
    return tool_calls(("file_risk_report", {"release_id": release_id, "severity": "high",
                                            "findings": ["The release looks risky."]}))


@pytest.fixture
def command(monkeypatch):
    from contextlib import nullcontext

    from agents.evals.management.commands import compare_evals

    monkeypatch.setattr(compare_evals, "evaluation_database", nullcontext)
    monkeypatch.setattr(compare_evals, "flush_evaluation_database", flush)


def test_one_command_compares_the_offline_provider_with_an_openai_compatible_endpoint(command, settings, capsys):
    from agents.evals.models import EvalRun

    settings.LLM_PROVIDER = "offline"
    with FakeOpenAIServer() as server:
        server.handler = always_high_detective
        call_command("compare_evals", "--suite", "release_risk", "--scenario", "high_error_rate",
                     "--scenario", "low_clean", "--target", "offline=LLM_PROVIDER=offline",
                     "--target", f"fake=LLM_PROVIDER=openai,OPENAI_BASE_URL={server.base_url},LLM_MODEL=fake-model,"
                                 "OPENAI_API_KEY=sk-not-printed", "--json", "-")
    out = capsys.readouterr().out
    matrix, rows = out.split("\n[")[0], json.loads("[" + out.split("\n[", 1)[1])
    assert [r["target"] for r in rows] == ["offline", "fake"]
    offline, fake = rows
    assert (offline["provider"], offline["passed"], offline["total"]) == ("offline", 2, 2)
    assert (fake["provider"], fake["model"], fake["total"]) == ("openai", "fake-model", 2)
    assert fake["passed"] < 2 and fake["tokens"] > 0 and server.requests
    assert "sk-not-printed" not in out and "OPENAI_API_KEY=***" in fake["settings"]
    lines = {line.split("  ")[0]: line for line in matrix.splitlines()}
    assert re.search(r"offline\s+fake", lines[""])
    assert "offline/offline-rules-v1" in lines["provider / model"] and "openai/fake-model" in lines["provider / model"]
    assert re.search(r"2/2\s+[01]/2", lines["passed"])
    assert re.search(r"1\.00 \[0\.34, 1\.00\]", lines["pass rate [95%]"])
    for measure in ("tool_usage", "decision_quality", "groundedness", "cost", "latency mean", "latency max"):
        assert measure in lines
    assert EvalRun.objects.filter(started_by__startswith="manage.py compare_evals").count() == 2


def test_targets_change_only_model_settings_and_read_keys_from_the_environment(monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", "secret-value")
    target = parse_target("judge=EVAL_JUDGE_API_KEY=env:JUDGE_KEY,LLM_TEMPERATURE=0.5")
    assert target.overrides == {"EVAL_JUDGE_API_KEY": "secret-value", "LLM_TEMPERATURE": 0.5}
    assert "secret-value" not in target.shown()
    with pytest.raises(CommandError, match="'DATABASE_URL' is not a setting a target may change"):
        call_command("compare_evals", "--suite", "release_risk", "--target", "a=DATABASE_URL=x", "--target", "b=")
    with pytest.raises(CommandError, match="at least two --target"):
        call_command("compare_evals", "--suite", "release_risk", "--target", "a=LLM_PROVIDER=offline")


def test_a_types_own_settings_are_the_prefixes_its_evaluation_registers(monkeypatch):
    from dataclasses import replace

    from casework.cases.types import CASE_TYPES

    target = parse_target("t=RELEASE_P95_HIGH_MS=900,TXN_MAX_STEPS=4,FRAUD_LOOKALIKE_CELL_CAP=3")
    assert target.overrides == {"RELEASE_P95_HIGH_MS": 900, "TXN_MAX_STEPS": 4, "FRAUD_LOOKALIKE_CELL_CAP": 3}
    with pytest.raises(ImproperlyConfigured, match="'WIDGET_LIMIT' is not a setting"):
        parse_target("t=WIDGET_LIMIT=1")
    release_risk = CASE_TYPES["release_risk"]
    monkeypatch.setattr(release_risk, "evaluation", replace(release_risk.evaluation, setting_prefixes=("WIDGET",)))
    assert parse_target("t=WIDGET_LIMIT=1").overrides == {"WIDGET_LIMIT": 1}
    with pytest.raises(ImproperlyConfigured, match="'RELEASE_P95_HIGH_MS' is not a setting"):
        parse_target("t=RELEASE_P95_HIGH_MS=900")
