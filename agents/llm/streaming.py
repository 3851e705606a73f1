"""Streamed answers: the OpenAI-compatible and Anthropic providers' streaming requests.

A provider asks for a stream only when the request has `on_delta` (the caller shows the
answer as it arrives); the result is the same Completion a plain request gives, so the
runtime's parsing, tool loop and records do not change. Each piece of text goes to
`on_delta` as it arrives; tool calls are assembled from their deltas and never shown.

Failures: an error before any text arrived is normalised as for a plain request (and the
runtime retries what is retryable). Once text has been shown, a failure, or a stream that
ends without saying it finished, is `StreamInterrupted`: not retried, since a new answer
would not continue the one on the page, and the caller keeps what arrived.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable

from agents.llm import errors
from agents.llm.base import Completion, ToolCall
from agents.llm.tokens import estimate_text_tokens


class _Text:
    """The text so far and how much of it the caller has seen."""

    def __init__(self, on_delta: Callable[[str], None]):
        self.parts: list[str] = []
        self.on_delta = on_delta

    def add(self, piece: str) -> None:
        if piece:
            self.parts.append(piece)
            self.on_delta(piece)

    @property
    def shown(self) -> int:
        return sum(len(p) for p in self.parts)

    @property
    def text(self) -> str:
        return "".join(self.parts)


def _transport(exc: Exception) -> errors.LLMError:
    return errors.NetworkError(f"The connection failed mid-answer ({type(exc).__name__}: {str(exc)[:300]}).")


@contextlib.contextmanager
def _reported(text: _Text, sdk_error: type[Exception], normalise: Callable[[Exception], errors.LLMError]):
    """A failure while streaming, as the module docstring says: normalised (the SDK's own
    errors by the provider's `normalise`, the transport's as a network error) and, once text
    was shown, StreamInterrupted."""
    try:
        yield
    except errors.LLMError as exc:
        if text.shown:
            raise _interrupted(text, exc) from exc
        raise
    except sdk_error as exc:
        normalised = normalise(exc)
        raise (_interrupted(text, normalised) if text.shown else normalised) from exc
    except Exception as exc:  # noqa: BLE001 - the transport's own (httpx, httpx2), unwrapped mid-stream
        normalised = _transport(exc)
        raise (_interrupted(text, normalised) if text.shown else normalised) from exc


def _require_finish(text: _Text, finished: bool) -> None:
    """A stream that closed before the endpoint said the answer was complete failed."""
    if not finished:
        error = "the stream ended before the endpoint said the answer was complete"
        raise _interrupted(text, error) if text.shown else errors.NetworkError(error[0].upper() + error[1:] + ".")


def _interrupted(text: _Text, error: errors.LLMError | str) -> errors.StreamInterrupted:
    message = error.message if isinstance(error, errors.LLMError) else error
    kind = f" ({error.kind})" if isinstance(error, errors.LLMError) else ""
    return errors.StreamInterrupted(f"The answer broke off after {text.shown} characters{kind}: {message}")


async def openai_stream(client, kwargs: dict, *, headers: dict, timeout: float, on_delta: Callable[[str], None],
                        normalise: Callable[[Exception], errors.LLMError], model: str,
                        include_usage: bool = True) -> Completion:
    """POST /chat/completions with `stream: true` through the SDK's raw path (AsyncStream of
    plain dicts: the SSE `data: {...}` chunks), assembling text, tool calls and usage."""
    import openai

    started = time.perf_counter()
    body = {**kwargs, "stream": True}
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    text, calls, usage, finish, answered_model = _Text(on_delta), {}, None, "", ""
    with _reported(text, openai.OpenAIError, normalise):
        stream = await client.post("/chat/completions", cast_to=object, body=body, stream=True,
                                   stream_cls=openai.AsyncStream[object],
                                   options={"headers": headers, "timeout": timeout})
        async for chunk in stream:
            if not isinstance(chunk, dict):
                raise errors.ProviderError("The endpoint streamed a chunk that is not a JSON object.")
            answered_model = chunk.get("model") or answered_model
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                text.add(delta.get("content") or "")
                for part in delta.get("tool_calls") or []:
                    call = calls.setdefault(part.get("index", len(calls)), {"id": "", "name": "", "arguments": ""})
                    function = part.get("function") or {}
                    call["id"] = part.get("id") or call["id"]
                    call["name"] += function.get("name") or ""
                    call["arguments"] += function.get("arguments") or ""
                finish = choice.get("finish_reason") or finish
    _require_finish(text, bool(finish))
    return Completion(
        text=text.text, tool_calls=[_tool_call(n, c) for n, c in sorted(calls.items())],
        input_tokens=(usage or {}).get("prompt_tokens") or 0,
        output_tokens=(usage or {}).get("completion_tokens") or estimate_text_tokens(
            text.text + "".join(c["arguments"] for c in calls.values())),
        model=answered_model or model, latency_ms=int((time.perf_counter() - started) * 1000), finish_reason=finish)


def _tool_call(number: int, call: dict) -> ToolCall:
    raw = call["arguments"]
    try:
        arguments = json.loads(raw) if raw.strip() else {}
        if not isinstance(arguments, dict):
            raise ValueError
        raw_kept = ""
    except ValueError:
        arguments, raw_kept = {}, raw
    return ToolCall(id=call["id"] or f"call_{number}", name=call["name"], arguments=arguments,
                    raw_arguments=raw_kept)


async def anthropic_stream(client, kwargs: dict, *, on_delta: Callable[[str], None],
                           normalise: Callable[[Exception], errors.LLMError], completion: Callable) -> Completion:
    """messages.stream(): text deltas as they arrive, then the SDK's final message."""
    import anthropic

    started = time.perf_counter()
    text = _Text(on_delta)
    with _reported(text, anthropic.AnthropicError, normalise):
        async with client.messages.stream(**kwargs) as stream:
            async for piece in stream.text_stream:
                text.add(piece)
            final = await stream.get_final_message()
    _require_finish(text, bool(final.stop_reason))
    return completion(final, started)


async def offline_stream(completion: Completion, on_delta: Callable[[str], None], delay: float) -> Completion:
    """The offline provider's deterministic answer, streamed word by word (`delay` between)."""
    import asyncio
    import re

    for piece in re.findall(r"\S+\s*|\s+", completion.text):
        on_delta(piece)
        if delay > 0:
            await asyncio.sleep(delay)
    return completion
