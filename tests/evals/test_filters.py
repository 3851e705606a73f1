"""run_evals --scenario / --tag choose what runs (compared with the same scenarios of the
baseline); --max-cost stops a real-model run before it overspends."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from agents.evals.models import EvalRun
from tests.evals.conftest import flush
from tests.evals.test_matrix import always_high_detective
from tests.fakes.llm_servers import FakeOpenAIServer

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def command(monkeypatch, settings):
    from contextlib import nullcontext

    from agents.evals.management.commands import run_evals

    settings.LLM_PROVIDER = "offline"
    monkeypatch.setattr(run_evals, "evaluation_database", nullcontext)
    monkeypatch.setattr(run_evals, "flush_evaluation_database", flush)


def test_scenario_and_tag_filters_compare_with_the_same_scenarios_of_the_baseline(command, capsys):
    call_command("run_evals", "--suite", "release_risk", "--scenario", "low_clean", "--scenario", "high_p95",
                 "--compare", "offline", "--fail-on-regression")
    run = EvalRun.objects.order_by("-id").first()
    assert sorted(s["id"] for s in run.report["scenarios"]) == ["high_p95", "low_clean"]
    assert run.regressions == 0 and run.baseline == "offline"
    capsys.readouterr()
    call_command("run_evals", "--suite", "release_risk", "--tag", "boundary", "--no-record")
    assert "4/4 passed" in capsys.readouterr().out  # the four boundary scenarios
    with pytest.raises(CommandError, match="No scenario matches"):
        call_command("run_evals", "--suite", "release_risk", "--tag", "nothing-has-this")
    with pytest.raises(CommandError, match="not saved from a run cut short or filtered"):
        call_command("run_evals", "--suite", "release_risk", "--scenario", "low_clean", "--save-baseline", "part",
                     "--no-record")


def test_the_spend_cap_stops_before_the_run_overspends(command, settings, capsys):
    # gpt-4o at $2.50 per million input tokens: 100,000 tokens a call, two calls a scenario: $0.50.
    with FakeOpenAIServer() as server:
        server.handler = lambda request: (lambda reply: (setattr(reply, "input_tokens", 100_000),
                                                         setattr(reply, "output_tokens", 0), reply)[-1])(
            always_high_detective(request))
        settings.LLM_PROVIDER, settings.OPENAI_BASE_URL = "openai", server.base_url
        settings.OPENAI_API_KEY, settings.LLM_MODEL = "test", "gpt-4o"
        settings.LLM_PRICES = {"gpt-4o": [2.5, 10.0]}
        from agents.llm.registry import reset_provider

        reset_provider()
        call_command("run_evals", "--suite", "release_risk", "--scenario", "low_clean", "--scenario", "high_p95",
                     "--scenario", "high_error_rate", "--max-cost", "0.8", "--no-record", "--json", "-")
        reset_provider()
    captured = capsys.readouterr()
    assert "Stopped at the spend cap $0.8000 (spent $0.5000): 2 scenario(s) not run" in captured.err
    assert len(server.requests) == 2
