"""Can this process reach its LLM endpoint? For /healthz: a TCP connection to the endpoint's
host and port, with a short timeout, remembered for CHECK_TTL_SECONDS so that a load
balancer probing every second does not open a connection every second.

Reaching the port is what a health probe can afford to know; a wrong key or model shows as
failed agent calls, which the case pages and /metrics report."""

from __future__ import annotations

import socket
import time
from urllib.parse import urlsplit

from django.conf import settings

CHECK_TTL_SECONDS = 30.0
CONNECT_TIMEOUT_SECONDS = 2.0
DEFAULT_URLS = {
    "openai": "https://api.openai.com/v1",
    "gemini": "https://generativelanguage.googleapis.com/v1beta/openai/",
    "anthropic": "https://api.anthropic.com",
}
_cache: dict[str, tuple[float, str | None]] = {}


def llm_endpoint() -> str | None:
    """The URL the configured provider calls, or None for the offline provider."""
    provider = settings.LLM_PROVIDER
    if provider == "offline":
        return None
    if provider == "anthropic":
        return settings.ANTHROPIC_BASE_URL or DEFAULT_URLS["anthropic"]
    if provider == "openai" and settings.OPENAI_BASE_URL:
        return settings.OPENAI_BASE_URL
    return DEFAULT_URLS[provider]


def llm_unreachable(url: str) -> str | None:
    """None when the endpoint's port accepts a connection, else why not."""
    now = time.monotonic()
    cached = _cache.get(url)
    if cached and now - cached[0] < CHECK_TTL_SECONDS:
        return cached[1]
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=CONNECT_TIMEOUT_SECONDS):
            error = None
    except OSError as exc:
        error = f"{parts.hostname}:{port} does not answer ({type(exc).__name__}: {exc})"
    _cache[url] = (now, error)
    return error
