"""Any OpenAI-compatible endpoint (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp server,
Gemini's compatible endpoint): the runtime's calls on aiohttp (agents/llm/openai_http.py),
the synchronous path and streamed answers through the `openai` SDK.

The SDK's own retries are off: agents.runtime.retry is the one retry policy. Native tool
calling and JSON-schema structured output are used where the endpoint accepts them; an
endpoint that refuses `response_format` is remembered and asked again with the schema in
the prompt, and the runtime extracts JSON from the text.
"""

from __future__ import annotations

import json
import time

import openai

from agents.llm import errors
from agents.llm.base import Capabilities, Completion, LLMRequest, Message, Provider, ToolCall
from agents.llm.openai_http import ChatEndpoint, status_error
from agents.llm.streaming import openai_stream

GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta/openai/"


class OpenAICompatibleProvider(Provider):
    name = "openai"

    def __init__(self, *, api_key: str, base_url: str | None, model: str, context_tokens: int,
                 structured_output: bool = True, timeout: float = 60.0, name: str = "openai"):
        self.name = name
        self.model = model
        self._context_tokens = context_tokens
        self._structured_output = structured_output
        self._api_key, self._base_url, self._timeout = api_key or "not-needed", base_url or None, timeout
        self._client = openai.OpenAI(api_key=self._api_key, base_url=self._base_url, max_retries=0, timeout=timeout)
        self._aclient: openai.AsyncOpenAI | None = None
        self._aclient_loop = None
        self._endpoint = ChatEndpoint(base_url=self._base_url, api_key=self._api_key)

    def capabilities(self) -> Capabilities:
        return Capabilities(tools=True, structured_output=self._structured_output,
                            context_tokens=self._context_tokens)

    def _async_client(self) -> openai.AsyncOpenAI:
        """One async client per event loop (its connection pool belongs to that loop)."""
        import asyncio

        loop = asyncio.get_running_loop()
        if self._aclient is None or self._aclient_loop is not loop:
            # The SDK's aiohttp transport: a quarter of the CPU per request of its default
            # httpx transport, whose connection pool is scanned on every request (bench/README.md).
            self._aclient = openai.AsyncOpenAI(api_key=self._api_key, base_url=self._base_url, max_retries=0,
                                               timeout=self._timeout, http_client=openai.DefaultAioHttpClient())
            self._aclient_loop = loop
        return self._aclient

    async def awarm(self) -> None:
        self._async_client()
        self._endpoint.session()

    def complete(self, request: LLMRequest) -> Completion:
        kwargs, use_schema = self._kwargs(request)
        started = time.perf_counter()
        try:
            response = self._client.chat.completions.create(**kwargs)
        except openai.BadRequestError as exc:
            if use_schema and _mentions_response_format(exc):
                # This endpoint does not do JSON-schema output: fall back to JSON in text.
                self._structured_output = False
                return self.complete(request)
            raise _normalise(exc) from exc
        except openai.OpenAIError as exc:
            raise _normalise(exc) from exc
        return self._completion(response, started)

    async def acomplete(self, request: LLMRequest) -> Completion:
        if request.on_delta is not None:
            return await self._astream(request)
        kwargs, use_schema = self._kwargs(request)
        started = time.perf_counter()
        headers, timeout = kwargs.pop("extra_headers", {}), kwargs.pop("timeout")
        try:
            # Straight onto aiohttp (agents/llm/openai_http.py): the SDK's request building cost
            # more CPU than the exchange; its error taxonomy is kept.
            data = await self._endpoint.post(kwargs, headers=headers, timeout=timeout)
        except errors.ValidationError as exc:
            if use_schema and _mentions_response_format(exc):
                # This endpoint does not do JSON-schema output: fall back to JSON in text.
                self._structured_output = False
                return await self.acomplete(request)
            raise
        return self._completion(_Answer.of(data), started)

    async def _astream(self, request: LLMRequest) -> Completion:
        """The answer as SSE chunks, each piece of text to request.on_delta (agents.llm.streaming)."""
        kwargs, use_schema = self._kwargs(request)
        headers, timeout = kwargs.pop("extra_headers", {}), kwargs.pop("timeout")
        usage = getattr(self, "_stream_usage", True)
        try:
            return await openai_stream(self._async_client(), kwargs, headers=headers, timeout=timeout,
                                       on_delta=request.on_delta, normalise=_normalise, model=self.model,
                                       include_usage=usage)
        except errors.ValidationError as exc:
            if use_schema and _mentions_response_format(exc):
                self._structured_output = False
                return await self._astream(request)
            if usage and "stream_options" in str(exc).lower():  # an endpoint without usage in streams
                self._stream_usage = False
                return await self._astream(request)
            raise

    def _kwargs(self, request: LLMRequest) -> tuple[dict, bool]:
        kwargs = {
            "model": self.model,
            "messages": [_to_openai(m) for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "timeout": request.timeout,
        }
        if request.metadata:
            kwargs["extra_headers"] = request.headers()
        if request.tools:
            kwargs["tools"] = [
                {"type": "function", "function": {"name": t.name, "description": t.description,
                                                  "parameters": t.parameters}}
                for t in request.tools
            ]
        use_schema = request.response_schema is not None and self._structured_output and not request.tools
        if use_schema:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.response_schema.name, "schema": request.response_schema.schema},
            }
        return kwargs, use_schema

    def _completion(self, response, started: float) -> Completion:
        latency_ms = int((time.perf_counter() - started) * 1000)
        if not getattr(response, "choices", None):
            raise errors.ProviderError("The endpoint answered without any choices.")
        choice = response.choices[0]
        message = choice.message
        calls = []
        for call in message.tool_calls or []:
            raw = call.function.arguments or ""
            try:
                arguments = json.loads(raw) if raw.strip() else {}
                if not isinstance(arguments, dict):
                    raise ValueError
                raw_kept = ""
            except ValueError:
                arguments, raw_kept = {}, raw
            calls.append(ToolCall(id=call.id or f"call_{len(calls)}", name=call.function.name,
                                  arguments=arguments, raw_arguments=raw_kept))
        usage = response.usage
        return Completion(
            text=message.content or "",
            tool_calls=calls,
            input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            output_tokens=getattr(usage, "completion_tokens", 0) or 0,
            model=response.model or self.model,
            latency_ms=latency_ms,
            finish_reason=choice.finish_reason or "",
        )


def _to_openai(m: Message) -> dict:
    if m.role == "tool":
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}
    data: dict = {"role": m.role, "content": m.content}
    if m.tool_calls:
        data["tool_calls"] = [
            {"id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": c.raw_arguments or json.dumps(c.arguments)}}
            for c in m.tool_calls
        ]
    return data


def _mentions_response_format(exc: Exception) -> bool:
    text = str(exc).lower()
    return "response_format" in text or "json_schema" in text


def _retry_after(exc) -> float | None:
    response = getattr(exc, "response", None)
    if response is None:
        return None
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _normalise(exc: Exception) -> errors.LLMError:
    status = getattr(exc, "status_code", None)
    text = _error_text(exc)
    if isinstance(exc, openai.APITimeoutError):
        return errors.TimeoutError(f"No answer before the timeout ({text}).")
    if isinstance(exc, openai.APIConnectionError):
        return errors.NetworkError(f"Could not reach the endpoint ({text}).")
    if isinstance(exc, openai.APIStatusError):
        return status_error(status, text, _retry_after(exc))
    return errors.ProviderError(text)


def _error_text(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:500]
    return str(exc)[:500]


class _Answer:
    """A chat completion's JSON read into the attributes `_completion` reads from the SDK's
    typed objects (choices[0].message.content / .tool_calls, usage, model)."""

    def __init__(self, data: dict):
        self.__dict__.update({k: _Answer.of(v) for k, v in data.items()})

    def __getattr__(self, name: str):
        return None  # a field the endpoint left out, as the SDK's models give it

    @staticmethod
    def of(value):
        if isinstance(value, dict):
            return _Answer(value)
        if isinstance(value, list):
            return [_Answer.of(v) for v in value]
        return value
