"""The offline provider (deterministic analysts in place of an LLM) and how the provider is
chosen from settings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from pydantic import BaseModel, Field

from agents.llm import errors
from agents.llm.base import LLMRequest, Message
from agents.llm.offline import OFFLINE_MODEL, OfflineProvider
from agents.llm.offline_registry import offline_analyst
from agents.llm.openai_provider import GEMINI_BASE_URL
from agents.llm.registry import build_provider, get_provider, reset_provider
from agents.runtime.agent import Agent
from agents.runtime.runner import run_agent
from agents.runtime.tools import Tool

REPO = Path(__file__).resolve().parents[2]


class Score(BaseModel):
    score: int = Field(ge=0, le=100)
    explanation: str


@offline_analyst("test_offline_score")
def score_analyst(data: dict) -> dict:
    amount = data["amount"]
    score = min(100, amount // 100)
    return {"score": score, "explanation": f"Amount {amount} scores {score} (1 point per 100)."}


@offline_analyst("test_offline_sees_messages")
def message_counting_analyst(data: dict, messages: list[Message]) -> dict:
    return {"score": len(messages), "explanation": f"{len(messages)} messages, first from {messages[0].role}."}


class Lookup(BaseModel):
    account: str


@offline_analyst("test_offline_tools")
def tool_using_analyst(data: dict, messages: list[Message]) -> dict | list:
    if not any(m.role == "tool" for m in messages):
        return [{"id": "t1", "name": "lookup", "arguments": {"account": data["account"]}}]
    looked_up = [m.content for m in messages if m.role == "tool"][0]
    return {"score": 40, "explanation": f"Looked up: {looked_up}"}


scorer = Agent(id="test_offline_score", system_prompt="Score.", output_model=Score)
counter = Agent(id="test_offline_sees_messages", system_prompt="Count.", output_model=Score)
tool_user = Agent(id="test_offline_tools", system_prompt="Look up, then score.", output_model=Score,
                  tools=(Tool("lookup", "Look an account up.", Lookup, lambda a: {"owner": f"owner of {a.account}"},
                                     consequence="read_only"),))
orphan = Agent(id="test_offline_nobody_home", system_prompt="?", output_model=Score)


def test_offline_is_the_default_provider(tmp_path):
    """With no provider and no key in the environment, settings choose the offline provider.
    pytest's own environment sets LLM_PROVIDER=offline, so this is checked in a fresh process
    without it."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LLM_PROVIDER", "OPENAI_API_KEY", "OPENAI_BASE_URL", "GOOGLE_API_KEY", "ANTHROPIC_API_KEY",
                        "ANTHROPIC_BASE_URL", "LLM_MODEL")}
    env.update(VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="casework.settings", SECRET_KEY="test-only")
    code = ("import django; django.setup(); from django.conf import settings; "
            "from agents.llm.registry import get_provider; p = get_provider(); "
            "print(settings.LLM_PROVIDER, type(p).__name__, p.name, p.model)")

    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)

    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["offline", OfflineProvider.__name__, "offline", OFFLINE_MODEL]


def test_the_test_settings_use_the_offline_provider():
    provider = get_provider()
    assert isinstance(provider, OfflineProvider)
    assert provider.name == "offline" and provider.model == OFFLINE_MODEL


def test_an_agent_runs_on_its_analyst_and_explains_itself():
    result = run_agent(scorer, {"amount": 4200})

    assert result.ok, result.error
    assert result.output == {"score": 42, "explanation": "Amount 4200 scores 42 (1 point per 100)."}
    assert (result.provider, result.model) == ("offline", OFFLINE_MODEL)
    assert result.input_tokens > 0 and result.output_tokens > 0


def test_the_same_input_gives_the_same_output():
    first, second = run_agent(scorer, {"amount": 777}), run_agent(scorer, {"amount": 777})
    assert first.output == second.output
    assert run_agent(scorer, {"amount": 9999}).output != first.output


def test_an_analyst_can_read_the_conversation():
    result = run_agent(counter, {"x": 1})
    assert result.output == {"score": 2, "explanation": "2 messages, first from system."}


def test_an_analyst_can_drive_the_tool_loop():
    result = run_agent(tool_user, {"account": "ACC-9"})

    assert result.ok, result.error
    assert [c["name"] for c in result.tool_calls] == ["lookup"]
    assert "owner of ACC-9" in result.output["explanation"]


def test_an_agent_without_an_analyst_gets_a_clear_error_result():
    result = run_agent(orphan, {"x": 1})

    assert not result.ok
    assert result.error_type == "provider"
    assert result.error == "The offline provider has no analyst for agent 'test_offline_nobody_home'."


def test_the_provider_refuses_a_request_without_structured_input():
    with pytest.raises(errors.ValidationError, match="needs structured input"):
        OfflineProvider().complete(LLMRequest(messages=[Message("user", "hi")], agent_id="test_offline_score"))


def test_a_second_analyst_for_the_same_agent_is_refused():
    with pytest.raises(ValueError, match="already registered"):
        offline_analyst("test_offline_score")(lambda data: {})
    assert offline_analyst("test_offline_score")(score_analyst) is score_analyst  # re-import is fine


# --- Choosing the provider ----------------------------------------------------------------


def test_the_provider_is_built_once_and_forgotten_on_reset(settings):
    first = get_provider()
    assert get_provider() is first
    reset_provider()
    assert get_provider() is not first


def test_gemini_uses_google_s_openai_compatible_endpoint(settings):
    settings.LLM_PROVIDER = "gemini"
    settings.GOOGLE_API_KEY = "g-key"
    settings.OPENAI_BASE_URL = ""
    settings.LLM_MODEL = ""

    provider = build_provider()

    assert provider.name == "gemini"
    assert str(provider._client.base_url) == GEMINI_BASE_URL
    assert provider._client.api_key == "g-key"
    assert provider.model == "gemini-2.0-flash"


def test_only_a_google_key_in_the_environment_selects_gemini(tmp_path):
    """The choice is made in settings from the environment, so it is checked in a fresh process."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LLM_PROVIDER", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "LLM_MODEL")}
    env.update(GOOGLE_API_KEY="g-key", VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="casework.settings",
               SECRET_KEY="test-only")
    code = ("import django; django.setup(); from django.conf import settings; "
            "from agents.llm.registry import build_provider; p = build_provider(); "
            "print(settings.LLM_PROVIDER, p.name, p._client.base_url, p.model)")

    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)

    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["gemini", "gemini", GEMINI_BASE_URL, "gemini-2.0-flash"]


def test_an_openai_key_beside_the_google_key_keeps_openai_selectable(settings):
    settings.LLM_PROVIDER = "openai"
    settings.OPENAI_API_KEY = "sk-test"
    settings.GOOGLE_API_KEY = "g-key"
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"

    provider = build_provider()

    assert provider.name == "openai"
    assert str(provider._client.base_url) == "http://127.0.0.1:9/v1/"


def test_anthropic_is_built_from_its_own_settings(settings):
    settings.LLM_PROVIDER = "anthropic"
    settings.ANTHROPIC_API_KEY = "a-key"
    settings.ANTHROPIC_BASE_URL = "http://127.0.0.1:9"
    settings.LLM_MODEL = ""

    provider = build_provider()

    assert provider.name == "anthropic"
    assert provider.model == "claude-sonnet-4-5"
    assert provider.capabilities().structured_output is False


def test_an_unknown_provider_is_a_configuration_error(settings):
    settings.LLM_PROVIDER = "mystery"
    with pytest.raises(ImproperlyConfigured, match="mystery"):
        build_provider()
