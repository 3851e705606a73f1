"""A run belongs to the worker that claimed it; other runtime edges."""

from __future__ import annotations

import sys
import threading

import pytest
from django.db import connection
from pydantic import BaseModel

from agents.llm import errors
from agents.llm.base import LLMRequest, Message
from agents.llm.offline import OfflineProvider
from agents.llm.offline_registry import offline_analyst
from agents.models import AgentCall, AgentRun
from agents.runtime import pipeline as pipeline_module
from agents.runtime.agent import Agent
from agents.runtime.pipeline import CallSpec, LostClaim, Pipeline, RunContext, Stage, register_pipeline
from agents.runtime.retry import RetryPolicy, call_with_retry
from casework.cases.services import case_create

pytestmark = pytest.mark.django_db


class Note(BaseModel):
    note: str


@offline_analyst("ownership_probe")
def _probe(data: dict) -> dict:
    # Simulate another worker (another thread, another connection) taking the run over while
    # this call was in flight. Analysts run on the event loop, where Django allows no queries.
    def take_over():
        try:
            AgentRun.objects.filter(pk=data["run"]).update(claim_token="someone-else")
        finally:
            connection.close()

    other = threading.Thread(target=take_over)
    other.start()
    other.join()
    return {"note": "done"}


PROBE = Agent(id="ownership_probe", system_prompt="Probe.", output_model=Note)
register_pipeline(Pipeline(name="ownership_test", modes={"one": [
    Stage("only", lambda ctx: [CallSpec("ownership_probe", PROBE, {"run": ctx.run.pk})]),
]}))


@pytest.mark.django_db(transaction=True)  # the takeover happens on another thread's connection
def test_a_worker_that_lost_its_run_writes_nothing_more(alice):
    case = case_create(actor=alice, case_type="release_risk", title="R")
    run = AgentRun.objects.create(case=case, pipeline="ownership_test", mode="one")
    pipeline_module.execute_run(run.pk)
    run.refresh_from_db()
    # The new holder's run is untouched: no result, no call row, still running, not failed.
    assert run.status == AgentRun.Status.RUNNING
    assert run.claim_token == "someone-else"
    assert run.results == {}
    assert not AgentCall.objects.filter(run=run).exists()


def test_saving_a_run_without_its_claim_raises_lost_claim(alice):
    case = case_create(actor=alice, case_type="release_risk", title="R")
    run = AgentRun.objects.create(case=case, pipeline="ownership_test", mode="one", claim_token="mine")
    AgentRun.objects.filter(pk=run.pk).update(claim_token="theirs")
    run.state = {"x": 1}
    with pytest.raises(LostClaim):
        pipeline_module._save(run, ["state"])
    run.refresh_from_db()
    assert run.state == {}


def test_a_retry_after_longer_than_the_longest_wait_is_not_retried_early():
    calls = []

    def operation():
        calls.append(1)
        raise errors.RateLimitError("slow down", retry_after=3600)

    with pytest.raises(errors.RateLimitError):
        call_with_retry(operation, RetryPolicy(max_retries=3, max_delay=60), sleep=lambda s: None)
    assert len(calls) == 1


def test_the_offline_provider_summarises_for_the_context_manager():
    provider = OfflineProvider()
    completion = provider.complete(LLMRequest(
        messages=[Message(role="user", content="x")], agent_id="detective.summary",
        input_data={"conversation": "user: find the release\ntool: {\"tests\": {\"failed\": 2}}\nnoise"},
    ))
    assert "failed" in completion.text and "noise" not in completion.text


def test_a_broken_pipeline_module_does_not_stop_the_others(monkeypatch, caplog, tmp_path):
    """Three types' pipeline modules loaded as their AppConfig.ready does
    (pipeline_module_load), the middle one half-written: the one before and the one after it
    still load (their code runs and registers their pipelines); the broken one is logged."""
    import importlib

    for name, body in {
        "a_loads_first": 'register_pipeline(Pipeline(name="load_probe_first", modes={}))',
        "b_half_written": "def broken(:",
        "c_loads_after": 'register_pipeline(Pipeline(name="load_probe_after", modes={}))',
    }.items():
        (tmp_path / f"{name}.py").write_text(
            f"from agents.runtime.pipeline import Pipeline, register_pipeline\n{body}\n", encoding="utf-8")
    registry = dict(pipeline_module.PIPELINES)  # what the fresh modules register goes here, not into the real one
    monkeypatch.setattr(pipeline_module, "PIPELINES", registry)
    monkeypatch.setattr(pipeline_module, "PIPELINE_MODULES", dict(pipeline_module.PIPELINE_MODULES))
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    try:
        loaded = [pipeline_module.pipeline_module_load(name)
                  for name in ("a_loads_first", "b_half_written", "c_loads_after")]
    finally:
        for name in ("a_loads_first", "b_half_written", "c_loads_after"):
            sys.modules.pop(name, None)

    assert loaded == [True, False, True]
    assert "b_half_written failed to import" in caplog.text
    assert {"load_probe_first", "load_probe_after"} <= set(registry)
    assert pipeline_module.PIPELINE_MODULES["load_probe_after"] == "c_loads_after"


def test_run_context_output_ignores_errored_results(alice):
    case = case_create(actor=alice, case_type="release_risk", title="R")
    run = AgentRun(case=case, pipeline="ownership_test", mode="one",
                   state={"results": {"a": {"output": {"x": 1}, "error": ""}, "b": {"output": None, "error": "boom"}}})
    ctx = RunContext(run)
    assert ctx.output("a") == {"x": 1} and ctx.output("b") is None
