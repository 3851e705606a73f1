"""Fake LLM endpoints over real HTTP: an OpenAI-compatible chat-completions server and an
Anthropic Messages server, each a ThreadingHTTPServer on 127.0.0.1 (port 0) in a daemon thread.

The real SDKs talk to them, so a test exercises the provider code end to end: request
serialisation, the SDK's response parsing and its exceptions, timeouts, headers.

Scripting, per test:
- `server.script(reply, reply, ...)` queues answers, used in order, one per request;
- `server.handler = fn` answers whatever the queue does not: `fn(request_json)` returns a
  Reply (or a str, taken as a plain text answer);
- otherwise the server's `default` reply (a short text answer unless given).
Replies are built with the helpers below (`text`, `json_answer`, `fenced_json`,
`prose_json`, `tool_calls`, `error`, `rate_limited`) and carry an optional delay.

A request with `"stream": true` is answered as the real API streams (server-sent events over
chunked transfer encoding: OpenAI's `data: {chunk}` ... `data: [DONE]`, Anthropic's
message_start ... message_stop), the text in word-sized pieces. A reply's `chunk_delay`
pauses between events, and `cut_after=N` hangs up after N events without finishing (a
connection lost mid-answer).

Every request is recorded (`server.requests`: path, headers, JSON body, arrival and answer
times), and the number of requests in flight is tracked (`server.max_in_flight`).
`latency=` adds a fixed delay to every answer: the benchmark's fixed-latency mode.

Run on its own (bench/llm_fanout.py does, so that the fake's CPU is not the client's GIL):
    python -m tests.fakes.llm_servers --latency 0.2 --reply-json '{"note": "ok"}'
prints `PORT <n>` and serves until stopped; GET /_stats answers {"requests", "in_flight",
"max_in_flight"} and POST /_reset clears them.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes.guard import RecordsErrors

# --- Replies ----------------------------------------------------------------------------


@dataclass
class FakeToolCall:
    name: str
    # A dict is sent as JSON; a str is sent exactly as given (e.g. broken JSON).
    arguments: dict | str = field(default_factory=dict)
    id: str = ""


@dataclass
class Reply:
    """One scripted answer, rendered in the wire format of the server that sends it."""

    text: str | None = None
    tool_calls: list[FakeToolCall] = field(default_factory=list)
    status: int = 200
    error_message: str = ""
    error_type: str = ""
    # A raw body (dict sent as JSON, str as is) instead of the rendered one.
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    # Streamed answers only: the pause between events, and hanging up after this many events.
    chunk_delay: float = 0.0
    cut_after: int | None = None


def text(content: str, **kw) -> Reply:
    return Reply(text=content, **kw)


def json_answer(obj: Any, **kw) -> Reply:
    return Reply(text=json.dumps(obj), **kw)


def fenced_json(obj: Any, **kw) -> Reply:
    return Reply(text=f"Here is my analysis:\n\n```json\n{json.dumps(obj, indent=2)}\n```\n\nLet me know.", **kw)


def prose_json(obj: Any, **kw) -> Reply:
    return Reply(text=f"I have looked at the case. My answer: {json.dumps(obj)} -- that is all.", **kw)


def tool_calls(*calls: tuple[str, dict | str] | FakeToolCall, content: str = "", **kw) -> Reply:
    made = [c if isinstance(c, FakeToolCall) else FakeToolCall(name=c[0], arguments=c[1]) for c in calls]
    return Reply(text=content or None, tool_calls=made, **kw)


def error(status: int, message: str, *, type: str = "", headers: dict[str, str] | None = None, **kw) -> Reply:  # noqa: A002
    return Reply(status=status, error_message=message, error_type=type, headers=headers or {}, **kw)


def rate_limited(retry_after: float | None = None, **kw) -> Reply:
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
    return error(429, "Rate limit reached for requests.", headers=headers, **kw)


# --- Recording --------------------------------------------------------------------------


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    json: dict
    received_at: float  # time.monotonic()
    answered_at: float | None = None
    status: int | None = None
    client_gone: bool = False  # the client hung up before the answer (e.g. its timeout)

    @property
    def messages(self) -> list[dict]:
        return self.json.get("messages", [])


# --- Servers ----------------------------------------------------------------------------

ReplySource = Reply | str | Callable[[dict], "Reply | str | None"]


class FakeLLMServer(RecordsErrors):
    route = ""
    fake_name = "fake LLM server"

    def __init__(self, *, latency: float = 0.0, default: ReplySource | None = None):
        self.latency = latency
        self.default: ReplySource = default if default is not None else text("ok")
        self.handler: Callable[[dict], Reply | str | None] | None = None
        self.requests: list[RecordedRequest] = []
        self._init_errors()  # self.errors: failures inside the fake itself (tests/fakes/guard.py)
        self.in_flight = 0
        self.max_in_flight = 0
        self._queue: deque[ReplySource] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # Life cycle

    def start(self, port: int = 0) -> FakeLLMServer:
        self._httpd = _Server(("127.0.0.1", port), _handler_class(self))
        self._httpd.daemon_threads = True
        # A client that gives up (its timeout) makes our late write fail: not an error here.
        self._httpd.handle_error = lambda request, client_address: None
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"{type(self).__name__}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; raise FakeServerError if the script failed (tests/fakes/guard.py)."""
        self._close()
        self.check_on_stop()

    def _close(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            if isinstance(self._httpd, _Server):
                self._httpd.drop_connections()
            self._httpd = None

    def refuse(self) -> None:
        """The endpoint goes down: stop listening, so that connections are refused, until accept()."""
        self._kept_port = self.port
        self._close()

    def accept(self) -> None:
        """The endpoint comes back, on the port it had."""
        self.start(self._kept_port)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> None:
        self._close()
        if exc_type is None:
            self.raise_recorded_errors()

    @property
    def port(self) -> int:
        if self._httpd is None and getattr(self, "_kept_port", None):
            return self._kept_port  # refusing connections (refuse()): the URL stays the same
        assert self._httpd is not None, "start() the server first"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        raise NotImplementedError

    # Scripting

    def script(self, *replies: ReplySource) -> None:
        with self._lock:
            self._queue.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.max_in_flight = self.in_flight

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def _next_reply(self, body: dict) -> Reply:
        """The queue first, then the handler (unless it returns None), then the default."""
        with self._lock:
            source = self._queue.popleft() if self._queue else None
        if source is None and self.handler is not None:
            made = self.handler(body)
            if made is not None:
                return _as_reply(made)
        if source is None:
            source = self.default
        if callable(source):
            source = source(body)
        return _as_reply(source)

    def stats(self) -> dict:
        with self._lock:
            return {"requests": len(self.requests), "in_flight": self.in_flight, "max_in_flight": self.max_in_flight}

    # Serving

    def _serve(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        record = RecordedRequest(path=handler.path, headers={k.lower(): v for k, v in handler.headers.items()},
                                 json=body, received_at=time.monotonic())
        with self._lock:
            self.requests.append(record)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        counted = True
        try:
            if handler.path.split("?")[0] != self.route:
                status, payload, headers = 404, {"error": {"message": f"No route {handler.path}"}}, {}
            else:
                try:
                    reply = self._next_reply(body)
                except Exception as exc:  # noqa: BLE001 - a broken script answers 500 and is kept for the test
                    self.record_error(exc)
                    reply = error(500, f"The fake's script failed: {type(exc).__name__}: {exc}")
                wait = self.latency + reply.delay
                if wait > 0:
                    time.sleep(wait)
                if body.get("stream") and reply.status < 400 and reply.body is None:
                    with self._lock:
                        self.in_flight -= 1
                    counted = False
                    record.status = self._stream(handler, reply, self._events(reply, body, next(self._ids)))
                    return
                status, payload, headers = self._render(reply, body, next(self._ids))
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            # Out of flight before the client can see the answer and send its next request.
            with self._lock:
                self.in_flight -= 1
            counted = False
            handler.send_response(status)
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            handler.wfile.flush()
            record.status = status
        except (BrokenPipeError, ConnectionResetError):
            record.client_gone = True
        except Exception as exc:  # a bug in the fake's rendering: the client sees a dropped connection
            self.record_error(exc)
            raise
        finally:
            record.answered_at = time.monotonic()
            if counted:
                with self._lock:
                    self.in_flight -= 1

    def _render(self, reply: Reply, request: dict, n: int) -> tuple[int, Any, dict[str, str]]:
        raise NotImplementedError

    def _events(self, reply: Reply, request: dict, n: int) -> list[str]:
        """A streamed answer's server-sent events, each `event:`/`data:` lines and a blank line."""
        raise NotImplementedError

    @staticmethod
    def _stream(handler: BaseHTTPRequestHandler, reply: Reply, events: list[str]) -> int:
        handler.send_response(200)
        for name, value in reply.headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Type", "text/event-stream; charset=utf-8")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        for number, event in enumerate(events):
            if reply.cut_after is not None and number >= reply.cut_after:
                # Hang up mid-answer: no last chunk, the socket closed under the client.
                handler.wfile.flush()
                handler.close_connection = True
                handler.connection.shutdown(2)
                return 200
            if number and reply.chunk_delay:
                time.sleep(reply.chunk_delay)
            data = event.encode()
            handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            handler.wfile.flush()
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()
        return 200


class _Server(ThreadingHTTPServer):
    # socketserver's default listen backlog is 5: a burst of new connections (a benchmark's
    # hundred threads) overflows it, and the dropped SYNs come back a second later.
    request_queue_size = 1024

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.open_connections: set = set()
        self._connections_lock = threading.Lock()

    def process_request(self, request, client_address):
        with self._connections_lock:
            self.open_connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self._connections_lock:
            self.open_connections.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        """Reset every kept-alive connection: a server that went down answers nothing more on them."""
        import socket

        with self._connections_lock:
            connections = list(self.open_connections)
        for request in connections:
            try:
                request.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _as_reply(made: Reply | str) -> Reply:
    if isinstance(made, str):
        return text(made)
    if not isinstance(made, Reply):
        raise TypeError(f"A fake reply must be a Reply or a str, not {type(made).__name__}.")
    return made


def _handler_class(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real endpoints do
        # http.server sends headers and body in two writes; with Nagle on, the body waits for
        # the client's delayed ACK (~40 ms a request). Real endpoints do not add that.
        disable_nagle_algorithm = True

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.path == "/_stats":
                self._send_json(200, server.stats())
            else:
                self._send_json(404, {"error": {"message": f"No route GET {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.path == "/_reset":
                server.reset()
                self._send_json(200, server.stats())
                return
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"_unparsed": raw.decode(errors="replace")}
            server._serve(self, body)

        def _send_json(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args) -> None:  # noqa: A002 - quiet in tests
            return None

    return Handler


def _estimate(value: Any) -> int:
    """A rough token count for the fake's usage figures (about 4 characters a token)."""
    return max(1, len(json.dumps(value)) // 4) if value else 0


class FakeOpenAIServer(FakeLLMServer):
    """POST /v1/chat/completions, answering as OpenAI's Chat Completions API does."""

    route = "/v1/chat/completions"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _render(self, reply: Reply, request: dict, n: int):
        if reply.body is not None:
            return reply.status, reply.body, reply.headers
        if reply.status >= 400:
            kind = reply.error_type or {400: "invalid_request_error", 401: "invalid_api_key",
                                        429: "rate_limit_exceeded"}.get(reply.status, "server_error")
            body = {"error": {"message": reply.error_message, "type": kind, "param": None, "code": kind}}
            return reply.status, body, reply.headers
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": c.id or f"call_{n}_{i}", "type": "function",
                 "function": {"name": c.name,
                              "arguments": c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments)}}
                for i, c in enumerate(reply.tool_calls)
            ]
        input_tokens = reply.input_tokens if reply.input_tokens is not None else _estimate(request.get("messages"))
        output_tokens = reply.output_tokens if reply.output_tokens is not None else _estimate(
            reply.text or [c.arguments for c in reply.tool_calls])
        body = {
            "id": f"chatcmpl-fake-{n}", "object": "chat.completion", "created": int(time.time()),
            "model": request.get("model") or "fake-model",
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
            "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                      "total_tokens": input_tokens + output_tokens},
        }
        return reply.status, body, reply.headers


def _pieces(text: str | None) -> list[str]:
    """Word-sized pieces of a streamed text, as models stream them (the space before a word)."""
    return re.findall(r"\s*\S+|\s+", text or "")


def _sse(data: Any, event: str = "") -> str:
    return (f"event: {event}\n" if event else "") + f"data: {json.dumps(data) if not isinstance(data, str) else data}\n\n"


def _openai_events(self, reply: Reply, request: dict, n: int) -> list[str]:
    base = {"id": f"chatcmpl-fake-{n}", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": request.get("model") or "fake-model"}

    def chunk(delta: dict, finish: str | None = None) -> str:
        return _sse({**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]})

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": piece}) for piece in _pieces(reply.text)]
    for i, c in enumerate(reply.tool_calls):
        arguments = c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments)
        half = len(arguments) // 2
        events.append(chunk({"tool_calls": [{"index": i, "id": c.id or f"call_{n}_{i}", "type": "function",
                                             "function": {"name": c.name, "arguments": arguments[:half]}}]}))
        events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": arguments[half:]}}]}))
    events.append(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
    if (request.get("stream_options") or {}).get("include_usage"):
        input_tokens = reply.input_tokens if reply.input_tokens is not None else _estimate(request.get("messages"))
        output_tokens = reply.output_tokens if reply.output_tokens is not None else _estimate(
            reply.text or [c.arguments for c in reply.tool_calls])
        events.append(_sse({**base, "choices": [], "usage": {
            "prompt_tokens": input_tokens, "completion_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens}}))
    return [*events, _sse("[DONE]")]


FakeOpenAIServer._events = _openai_events


class FakeAnthropicServer(FakeLLMServer):
    """POST /v1/messages, answering as Anthropic's Messages API does (content blocks,
    stop_reason, usage; errors as {"type": "error", "error": {"type", "message"}})."""

    route = "/v1/messages"

    @property
    def base_url(self) -> str:
        # The SDK appends /v1/messages itself.
        return f"http://127.0.0.1:{self.port}"

    def _render(self, reply: Reply, request: dict, n: int):
        if reply.body is not None:
            return reply.status, reply.body, reply.headers
        if reply.status >= 400:
            kind = reply.error_type or {400: "invalid_request_error", 401: "authentication_error",
                                        403: "permission_error", 404: "not_found_error", 429: "rate_limit_error",
                                        529: "overloaded_error"}.get(reply.status, "api_error")
            body = {"type": "error", "error": {"type": kind, "message": reply.error_message}}
            return reply.status, body, reply.headers
        content: list[dict] = [{"type": "text", "text": reply.text}] if reply.text else []
        for i, c in enumerate(reply.tool_calls):
            if not isinstance(c.arguments, dict):
                raise TypeError("Anthropic tool_use input is always a JSON object.")
            content.append({"type": "tool_use", "id": c.id or f"toolu_{n}_{i}", "name": c.name, "input": c.arguments})
        input_tokens = reply.input_tokens if reply.input_tokens is not None else _estimate(
            [request.get("system"), request.get("messages")])
        output_tokens = reply.output_tokens if reply.output_tokens is not None else _estimate(content)
        body = {
            "id": f"msg_fake_{n}", "type": "message", "role": "assistant",
            "model": request.get("model") or "fake-claude", "content": content,
            "stop_reason": "tool_use" if reply.tool_calls else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        }
        return reply.status, body, reply.headers


def _anthropic_events(self, reply: Reply, request: dict, n: int) -> list[str]:
    input_tokens = reply.input_tokens if reply.input_tokens is not None else _estimate(
        [request.get("system"), request.get("messages")])
    events = [_sse({"type": "message_start", "message": {
        "id": f"msg_fake_{n}", "type": "message", "role": "assistant", "model": request.get("model") or "fake-claude",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}, "message_start")]
    index = 0
    if reply.text:
        events.append(_sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                           "content_block_start"))
        events += [_sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}},
                        "content_block_delta") for piece in _pieces(reply.text)]
        events.append(_sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
        index = 1
    for i, c in enumerate(reply.tool_calls, start=index):
        events.append(_sse({"type": "content_block_start", "index": i, "content_block": {
            "type": "tool_use", "id": c.id or f"toolu_{n}_{i}", "name": c.name, "input": {}}}, "content_block_start"))
        events.append(_sse({"type": "content_block_delta", "index": i, "delta": {
            "type": "input_json_delta", "partial_json": json.dumps(c.arguments)}}, "content_block_delta"))
        events.append(_sse({"type": "content_block_stop", "index": i}, "content_block_stop"))
    output_tokens = reply.output_tokens if reply.output_tokens is not None else _estimate(
        reply.text or [c.arguments for c in reply.tool_calls])
    events.append(_sse({"type": "message_delta", "delta": {"stop_reason": "tool_use" if reply.tool_calls else "end_turn",
                                                           "stop_sequence": None},
                        "usage": {"output_tokens": output_tokens}}, "message_delta"))
    return [*events, _sse({"type": "message_stop"}, "message_stop")]


FakeAnthropicServer._events = _anthropic_events


def main(argv: list[str] | None = None) -> None:
    import argparse
    import signal
    import sys

    parser = argparse.ArgumentParser(description="Serve a fake LLM endpoint until stopped.")
    parser.add_argument("--kind", choices=["openai", "anthropic"], default="openai")
    parser.add_argument("--latency", type=float, default=0.2, help="Seconds before every answer.")
    parser.add_argument("--reply-json", default='{"note": "ok"}', help="The JSON object every answer holds.")
    args = parser.parse_args(argv)
    cls = FakeOpenAIServer if args.kind == "openai" else FakeAnthropicServer
    server = cls(latency=args.latency, default=json_answer(json.loads(args.reply_json))).start()
    print(f"PORT {server.port}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    server.stop()
    sys.exit(0)


if __name__ == "__main__":
    main()
