"""The LLM endpoint down for minutes costs runs latency, not their retries (issue 26, point 2).

The fake OpenAI-compatible server stops listening (connections refused) and comes back on
the same port. After LLM_BREAKER_THRESHOLD connection failures the provider's breaker opens:
the run goes back to the queue "waiting for the model", with no call recorded as failed, and
/healthz says degraded. A wake-up while the breaker is open sends no request. After the
cool-off (a clock the test sets, never a wait) one probe goes through; the endpoint answers
and the run completes, with no person acting. A run that waited past RUN_TIMEOUT_SECONDS ends
timed_out, saying it waited for the model."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone
from prometheus_client import REGISTRY
from pydantic import BaseModel, Field

from agents.llm import breaker as breaker_module
from agents.llm.breaker import CircuitOpen, breaker_for
from agents.models import AgentCall, AgentRun
from agents.runtime.agent import Agent
from agents.runtime.pipeline import CallSpec, Pipeline, RunContext, Stage, register_pipeline
from agents.tasks import pipeline_enqueue, run_pipeline
from audit.models import AuditEntry
from casework.cases.services import case_create
from casework.ops import llm_check
from tests.fakes.llm_servers import json_answer

pytestmark = pytest.mark.django_db

PIPELINE = "test_llm_breaker"


class Note(BaseModel):
    summary: str = Field(description="What the agent saw.")


reader = Agent(id="test_breaker_reader", system_prompt="Read the case.", output_model=Note)


def read(ctx: RunContext) -> list[CallSpec]:
    return [CallSpec("reader", reader, {"case": ctx.case.reference})]


register_pipeline(Pipeline(name=PIPELINE, modes={"full": [Stage("read", read)]}, description="One agent."))


class Clock:
    def __init__(self):
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch, settings):
    settings.LLM_BREAKER_THRESHOLD = 2
    settings.LLM_BREAKER_COOLDOWN_SECONDS = 30
    settings.LLM_RATE_LIMIT_RETRIES = 3
    clock = Clock()
    monkeypatch.setattr(breaker_module, "breaker_clock", clock)
    cache.clear()
    llm_check._cache.clear()
    yield clock
    cache.clear()
    llm_check._cache.clear()


@pytest.fixture
def endpoint(fake_openai):
    fake_openai.default = json_answer({"summary": "read it"})
    return fake_openai


@pytest.fixture
def case(alice):
    return case_create(actor=alice, case_type="fraud_alert", title="Card testing on ACC-3")


def enqueue(case, capture) -> AgentRun:
    with capture(execute=True):
        run = pipeline_enqueue(case=case, pipeline=PIPELINE, mode="full", actor="system")
    run.refresh_from_db()
    return run


def wake(run: AgentRun) -> AgentRun:
    """Its countdown message arrives (its not_before has come)."""
    AgentRun.objects.filter(pk=run.pk).update(not_before=timezone.now() - timedelta(seconds=1))
    run_pipeline.delay(run.pk)
    run.refresh_from_db()
    return run


def test_runs_wait_while_the_endpoint_is_down_and_resume_when_it_answers(
        case, endpoint, clock, client, django_capture_on_commit_callbacks):
    endpoint.refuse()
    opened = REGISTRY.get_sample_value("casework_llm_breaker_opened_total", {"provider": "openai"}) or 0.0

    run = enqueue(case, django_capture_on_commit_callbacks)

    assert REGISTRY.get_sample_value("casework_llm_breaker_opened_total", {"provider": "openai"}) == opened + 1
    # Two refused connections opened the breaker; the third attempt was never sent.
    assert run.status == AgentRun.Status.QUEUED, run.error
    assert run.state["waiting_for_model"]["provider"] == "openai"
    assert run.state["waiting_for_model"]["calls"] == ["reader"]
    assert run.status_label.startswith("Waiting for the model (openai unreachable since")
    assert run.not_before is not None and run.claim_token == ""
    assert not AgentCall.objects.filter(run=run).exists()  # nothing failed: nothing to re-run
    assert AuditEntry.objects.filter(action="agent.run_waiting_for_model", object_id=str(run.pk)).count() == 1
    health = client.get("/healthz").json()
    assert health["status"] == "degraded", health
    assert "circuit breaker is open" in health["checks"]["llm"]
    assert health["llm_breaker"]["runs_waiting"] == 1 and health["llm_breaker"]["failures"] == 2

    # Woken while the breaker is open: no request is sent, it waits again (no new audit entry).
    with pytest.raises(CircuitOpen):
        breaker_for("openai").before_request()
    run = wake(run)
    assert run.status == AgentRun.Status.QUEUED and "waiting_for_model" in run.state
    assert AuditEntry.objects.filter(action="agent.run_waiting_for_model", object_id=str(run.pk)).count() == 1

    # The endpoint is back; the cool-off passes; the next wake-up is the probe, and succeeds.
    endpoint.accept()
    clock.now += 31
    run = wake(run)

    assert run.status == AgentRun.Status.COMPLETED, run.error
    assert "waiting_for_model" not in run.state
    assert run.results["reader"]["output"] == {"summary": "read it"}
    assert endpoint.request_count == 1
    assert breaker_for("openai").status() is None
    llm_check._cache.clear()
    assert client.get("/healthz").json()["status"] == "ok"


def test_a_run_that_waited_past_its_timeout_ends_timed_out_saying_why(
        case, endpoint, clock, settings, django_capture_on_commit_callbacks):
    endpoint.refuse()
    run = enqueue(case, django_capture_on_commit_callbacks)
    assert run.status == AgentRun.Status.QUEUED
    AgentRun.objects.filter(pk=run.pk).update(
        started_at=timezone.now() - timedelta(seconds=settings.RUN_TIMEOUT_SECONDS + 1))

    run = wake(run)

    assert run.status == AgentRun.Status.TIMED_OUT
    assert "waiting for the model" in run.error and "openai endpoint has been unreachable" in run.error
    assert endpoint.request_count == 0


def test_a_failed_probe_opens_the_breaker_for_another_cool_off(endpoint, clock):
    from agents.llm.errors import NetworkError

    breaker = breaker_for("openai")
    for _ in range(2):
        breaker.before_request()
        breaker.after_failure(NetworkError("Connection refused"))
    assert breaker.status()["state"] == "open"
    clock.now += 31
    assert breaker.status()["state"] == "half_open"
    breaker.before_request()  # the probe
    with pytest.raises(CircuitOpen):
        breaker.before_request()  # one probe at a time
    breaker.after_failure(NetworkError("Connection refused"))

    assert breaker.status()["state"] == "open" and breaker.status()["retry_in_seconds"] == 30


def test_every_request_on_the_event_loop_reads_the_one_cache_backend_of_its_thread():
    """Each LLM request is its own asyncio task on the worker's event loop thread
    (agents/runtime/aio.py); Django's `cache` proxy is looked up per task there, and so built a
    backend (with Redis, a client and a connection pool) per request."""
    import asyncio
    import threading

    from django.core.cache import caches

    from agents.llm.breaker import _cache

    def on_a_loop_thread(read):
        async def both():
            async def one():
                return read()
            return await asyncio.gather(one(), one())

        seen = []
        thread = threading.Thread(target=lambda: seen.extend(asyncio.run(both())))
        thread.start()
        thread.join()
        return seen

    first, second = on_a_loop_thread(_cache)
    assert first is second
    proxied = on_a_loop_thread(lambda: caches["default"])
    assert proxied[0] is not proxied[1]  # what the breaker did per request through the proxy
