"""The fake OpenAI-compatible server (tests/fakes/llm_servers.py) answering the fraud agents,
in a process of its own. Run by bench/runtime_throughput.py:

    .venv/bin/python bench/fraud_fake_server.py --latency 0.2

prints `PORT <n>` and serves until SIGTERM; SIGUSR1 stops it listening (connections refused),
SIGUSR2 listens again on the same port. Each fraud agent (told apart by its system
prompt) is answered with what its offline analyst concludes from the data fenced in the
request, as bench/fraud_pipeline.py's in-process `offline_answering_fake` does; anything else
gets a small JSON answer.

Besides the fake's GET /_stats and POST /_reset, GET /_requests answers every request recorded
since the last reset, as rows [received, answered, status, run, agent, call, client_gone]:
times are time.monotonic() of this process, which on Linux is the same clock as the
benchmark's, and run/agent/call come from the X-Casework-* headers the runtime sends.

Its own process because the fake's CPU (http.server, JSON, a thread per connection) must
not share a GIL with the client it measures. Imports no Django: the fraud agents' prompts and
offline analysts are plain Python.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.llm.offline_registry import OFFLINE_ANALYSTS  # noqa: E402
from casework.fraud.agents import PROMPTS  # noqa: E402
from tests.fakes import llm_servers  # noqa: E402
from tests.fakes.llm_servers import FakeOpenAIServer, json_answer  # noqa: E402

# system_prompt_for() strips the agent's prompt before adding the data rules and the schema.
_PROMPTS = [(agent_id, prompt.strip()) for agent_id, prompt in PROMPTS.items()]


def answer(body: dict):
    """The offline analyst's output for a fraud agent's request; None (the default) otherwise."""
    messages = body.get("messages") or []
    if len(messages) < 2:
        return None
    system, user = messages[0].get("content") or "", messages[1].get("content") or ""
    agent_id = next((a for a, prompt in _PROMPTS if system.startswith(prompt)), None)
    if agent_id is None:
        return None
    # The user message is one fence: a marker line, the JSON, a closing marker line.
    data = json.loads("\n".join(user.split("\n")[1:-1]))
    return json_answer(OFFLINE_ANALYSTS[agent_id](data))


class RecordingServer(FakeOpenAIServer):
    """The fake with GET /_requests: each request's times and X-Casework-* headers."""

    def start(self, port: int = 0) -> RecordingServer:
        server = self
        base = llm_servers._handler_class(self)  # noqa: SLF001 - extending the fake's own handler

        class Handler(base):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if self.path != "/_requests":
                    return super().do_GET()
                with server._lock:  # noqa: SLF001
                    rows = [[r.received_at, r.answered_at, r.status, r.headers.get("x-casework-run"),
                             r.headers.get("x-casework-agent"), r.headers.get("x-casework-call"), r.client_gone]
                            for r in server.requests]
                self._send_json(200, {"requests": rows})

        self._httpd = llm_servers._Server(("127.0.0.1", port), Handler)  # noqa: SLF001
        self._httpd.daemon_threads = True
        self._httpd.handle_error = lambda request, client_address: None
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="RecordingServer", daemon=True)
        self._thread.start()
        return self


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.2, help="Seconds before every answer (0.2).")
    args = parser.parse_args()
    server = RecordingServer(latency=args.latency, default=json_answer({"note": "ok"}))
    server.handler = answer
    server.start()
    print(f"PORT {server.port}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    # The endpoint goes down (connections refused) on SIGUSR1 and comes back, on its port, on
    # SIGUSR2 (bench/infra_restarts.py). Off the signal handler's frame: shutdown() waits for
    # serve_forever, which this main thread is not running.
    signal.signal(signal.SIGUSR1, lambda *a: threading.Thread(target=server.refuse).start())
    signal.signal(signal.SIGUSR2, lambda *a: threading.Thread(target=server.accept).start())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    server.stop()


if __name__ == "__main__":
    main()
