"""Anthropic's Messages API through the `anthropic` SDK.

Its shape differs from OpenAI's (system prompt apart, tool_use / tool_result content
blocks); translating to and from our Message and ToolCall happens here and nowhere else.
It has no JSON-schema output mode, so the runtime's JSON-in-text extraction applies.
"""

from __future__ import annotations

import time

import anthropic

from agents.llm import errors
from agents.llm.base import Capabilities, Completion, LLMRequest, Message, Provider, ToolCall
from agents.llm.streaming import anthropic_stream


class AnthropicProvider(Provider):
    name = "anthropic"

    def __init__(self, *, api_key: str, base_url: str | None, model: str, context_tokens: int, timeout: float = 60.0):
        self.model = model
        self._context_tokens = context_tokens
        self._api_key, self._base_url, self._timeout = api_key or "not-set", base_url or None, timeout
        self._client = anthropic.Anthropic(api_key=self._api_key, base_url=self._base_url, max_retries=0,
                                           timeout=timeout)
        self._aclient: anthropic.AsyncAnthropic | None = None
        self._aclient_loop = None

    def capabilities(self) -> Capabilities:
        return Capabilities(tools=True, structured_output=False, context_tokens=self._context_tokens)

    async def awarm(self) -> None:
        """One async client per event loop (its connection pool belongs to that loop)."""
        import asyncio

        loop = asyncio.get_running_loop()
        if self._aclient is None or self._aclient_loop is not loop:
            self._aclient = anthropic.AsyncAnthropic(api_key=self._api_key, base_url=self._base_url,
                                                     max_retries=0, timeout=self._timeout)
            self._aclient_loop = loop

    def complete(self, request: LLMRequest) -> Completion:
        started = time.perf_counter()
        try:
            response = self._client.messages.create(**self._kwargs(request))
        except anthropic.AnthropicError as exc:
            raise _normalise(exc) from exc
        return self._completion(response, started)

    async def acomplete(self, request: LLMRequest) -> Completion:
        await self.awarm()  # one client per event loop
        if request.on_delta is not None:  # shown as it arrives (agents.llm.streaming)
            return await anthropic_stream(self._aclient, self._kwargs(request), on_delta=request.on_delta,
                                          normalise=_normalise, completion=self._completion)
        started = time.perf_counter()
        try:
            response = await self._aclient.messages.create(**self._kwargs(request))
        except anthropic.AnthropicError as exc:
            raise _normalise(exc) from exc
        return self._completion(response, started)

    def _kwargs(self, request: LLMRequest) -> dict:
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        # No temperature: the SDK (2.x) sends anthropic-version 2026-10-21, which rejects
        # temperature, top_p and top_k with a 400, and its create() no longer accepts them.
        kwargs = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": _to_anthropic([m for m in request.messages if m.role != "system"]),
            "timeout": request.timeout,
        }
        if request.metadata:
            kwargs["extra_headers"] = request.headers()
        if system:
            kwargs["system"] = system
        if request.tools:
            kwargs["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.parameters}
                               for t in request.tools]
        return kwargs

    @staticmethod
    def _completion(response, started: float) -> Completion:
        text_parts, calls = [], []
        for block in response.content:
            if block.type == "text":
                text_parts.append(block.text)
            elif block.type == "tool_use":
                args = block.input if isinstance(block.input, dict) else {}
                calls.append(ToolCall(id=block.id, name=block.name, arguments=args))
        return Completion(
            text="".join(text_parts),
            tool_calls=calls,
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            model=response.model,
            latency_ms=int((time.perf_counter() - started) * 1000),
            finish_reason=response.stop_reason or "",
        )


def _to_anthropic(messages: list[Message]) -> list[dict]:
    """Consecutive tool results become one user turn of tool_result blocks, as the API asks."""
    out: list[dict] = []
    for m in messages:
        if m.role == "tool":
            block = {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m.role == "assistant" and m.tool_calls:
            blocks: list[dict] = [{"type": "text", "text": m.content}] if m.content else []
            blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in m.tool_calls]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def _normalise(exc: Exception) -> errors.LLMError:
    status = getattr(exc, "status_code", None)
    text = str(getattr(exc, "message", "") or exc)[:500]
    if isinstance(exc, anthropic.APITimeoutError):
        return errors.TimeoutError(f"No answer before the timeout ({text}).")
    if isinstance(exc, anthropic.APIConnectionError):
        return errors.NetworkError(f"Could not reach the endpoint ({text}).")
    if isinstance(exc, anthropic.AuthenticationError | anthropic.PermissionDeniedError):
        return errors.AuthenticationError(f"HTTP {status}: {text}", status_code=status)
    if isinstance(exc, anthropic.RateLimitError):
        retry_after = None
        response = getattr(exc, "response", None)
        if response is not None and response.headers.get("retry-after"):
            try:
                retry_after = float(response.headers["retry-after"])
            except ValueError:
                retry_after = None
        return errors.RateLimitError(f"HTTP 429: {text}", status_code=429, retry_after=retry_after)
    if isinstance(exc, anthropic.BadRequestError | anthropic.UnprocessableEntityError):
        return errors.ValidationError(f"HTTP {status}: {text}", status_code=status)
    if isinstance(exc, anthropic.APIStatusError):
        return errors.ProviderError(f"HTTP {status}: {text}", status_code=status)
    return errors.ProviderError(text)
