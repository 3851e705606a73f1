"""The provider in use, built from settings when first asked for (never at import)."""

from __future__ import annotations

import threading

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from agents.llm.base import Provider

_lock = threading.Lock()
_provider: Provider | None = None


def build_provider() -> Provider:
    kind = settings.LLM_PROVIDER
    if kind == "offline":
        from agents.llm.offline import OfflineProvider

        return OfflineProvider()
    if kind in ("openai", "gemini"):
        from agents.llm.openai_provider import GEMINI_BASE_URL, OpenAICompatibleProvider

        if kind == "gemini":
            return OpenAICompatibleProvider(
                api_key=settings.GOOGLE_API_KEY, base_url=settings.OPENAI_BASE_URL or GEMINI_BASE_URL,
                model=settings.LLM_MODEL or "gemini-2.0-flash", context_tokens=settings.LLM_CONTEXT_TOKENS,
                timeout=settings.LLM_TIMEOUT_SECONDS, name="gemini",
            )
        return OpenAICompatibleProvider(
            api_key=settings.OPENAI_API_KEY, base_url=settings.OPENAI_BASE_URL,
            model=settings.LLM_MODEL or "gpt-4o-mini", context_tokens=settings.LLM_CONTEXT_TOKENS,
            timeout=settings.LLM_TIMEOUT_SECONDS,
        )
    if kind == "anthropic":
        from agents.llm.anthropic_provider import AnthropicProvider

        return AnthropicProvider(
            api_key=settings.ANTHROPIC_API_KEY, base_url=settings.ANTHROPIC_BASE_URL,
            model=settings.LLM_MODEL or "claude-sonnet-4-5", context_tokens=settings.LLM_CONTEXT_TOKENS,
            timeout=settings.LLM_TIMEOUT_SECONDS,
        )
    raise ImproperlyConfigured(f"LLM_PROVIDER={kind!r} is not one of offline, openai, gemini, anthropic.")


def get_provider() -> Provider:
    global _provider
    if _provider is None:
        with _lock:
            if _provider is None:
                _provider = build_provider()
    return _provider


def reset_provider() -> None:
    """Forget the built provider (tests and settings changes)."""
    global _provider
    with _lock:
        _provider = None


def provider_warm_up() -> Provider:
    """Build the provider and its client on the runtime's event loop (a worker calls this when
    it starts: otherwise its first runs wait while the SDK is imported on the loop)."""
    from agents.runtime import aio

    provider = get_provider()
    aio.run(provider.awarm())
    return provider
