"""The runtime's request to an OpenAI-compatible endpoint: one POST /chat/completions on an
aiohttp session per event loop, the answer read as JSON, a failure named as the SDK names it.

Why not the SDK's own request, as before: on a busy worker, building each request through
the SDK (its request options model, header merging and httpx request object in front of the
same aiohttp transport) cost more CPU than the HTTP exchange itself, about a third of the
samples of a worker process at 200 calls/s (bench/README.md, runtime_throughput). The SDK still
serves the synchronous path, streaming and the error taxonomy this module follows:

    401, 403       AuthenticationError     not retried
    400, 422       ValidationError         not retried (a refused response_format falls back)
    429            RateLimitError          retried, after Retry-After when given
    other 4xx/5xx  ProviderError           retried when 5xx
    no answer in time                      TimeoutError
    no connection                          NetworkError
"""

from __future__ import annotations

import asyncio

import aiohttp
import orjson

from agents.llm import errors

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class ChatEndpoint:
    def __init__(self, *, base_url: str | None, api_key: str):
        self.url = (base_url or DEFAULT_BASE_URL).rstrip("/") + "/chat/completions"
        self._headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json",
                         "Accept": "application/json", "User-Agent": "casework"}
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def session(self) -> aiohttp.ClientSession:
        """One session (connection pool) per event loop; no limit of its own: the runtime's
        LLM_MAX_CONCURRENCY bounds the requests in flight."""
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            self._session = aiohttp.ClientSession(headers=self._headers, connector=aiohttp.TCPConnector(limit=0))
            self._loop = loop
        return self._session

    async def post(self, body: dict, *, headers: dict[str, str], timeout: float) -> dict:
        try:
            async with self.session().post(self.url, data=orjson.dumps(body), headers=headers,
                                           timeout=aiohttp.ClientTimeout(total=timeout)) as response:
                raw = await response.read()
                status, retry_after = response.status, response.headers.get("retry-after")
        except TimeoutError as exc:  # aiohttp's read timeouts are TimeoutErrors too
            raise errors.TimeoutError(f"No answer before the timeout ({timeout:g} s).") from exc
        except aiohttp.ClientError as exc:
            raise errors.NetworkError(f"Could not reach the endpoint ({exc}).") from exc
        if status >= 400:
            raise status_error(status, _error_text(raw), _seconds(retry_after))
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise errors.ProviderError(f"The endpoint answered with something that is not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise errors.ProviderError("The endpoint answered JSON that is not a chat completion object.")
        return data

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()


def status_error(status: int, text: str, retry_after: float | None) -> errors.LLMError:
    """An HTTP error status as our error: the one mapping for both ways a request is sent
    (this module, and the SDK's exceptions in openai_provider._normalise)."""
    if status in (401, 403):
        return errors.AuthenticationError(f"HTTP {status}: {text}", status_code=status)
    if status == 429:
        return errors.RateLimitError(f"HTTP 429: {text}", status_code=429, retry_after=retry_after)
    if status in (400, 422):
        return errors.ValidationError(f"HTTP {status}: {text}", status_code=status)
    return errors.ProviderError(f"HTTP {status}: {text}", status_code=status, retry_after=retry_after)


def _error_text(raw: bytes) -> str:
    """The endpoint's own message ({"error": {"message": ...}}), else its body."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw.decode("utf-8", "replace").strip()[:500] or "(empty body)"
    inner = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(inner, dict) and inner.get("message"):
        return str(inner["message"])[:500]
    return str(body)[:500]


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
