"""A real HTTP receiver on 127.0.0.1 that verifies every request's signature with the
Standard Webhooks reference library, answering from a script (500, 500, then 200 ...). A
handler that raises is recorded, and close() raises it (tests/fakes/guard.py)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from tests.fakes.guard import RecordsErrors


@dataclass
class Received:
    headers: dict
    body: bytes
    verified_by: list[str] = field(default_factory=list)  # which of the receiver's secrets verified it
    client: tuple[str, int] = ("", 0)  # the sender's address and port: which process sent it


class Receiver(RecordsErrors):
    fake_name = "webhook receiver"

    def __init__(self):
        self._init_errors()
        self.received: list[Received] = []
        self.script: list[int] = []  # statuses to answer, in order; 200 once it is empty
        self.secrets: list[str] = []  # what the receiver holds
        # hold(): the next requests wait, in flight, until release(); arrived is set as one comes.
        self._go = threading.Event()
        self._go.set()
        self._arrived = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                try:
                    self._answer()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the sender gave up (its timeout): not the receiver's failure
                except Exception as exc:
                    receiver.record_error(exc)
                    raise

            def _answer(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                headers = {k.lower(): v for k, v in self.headers.items()}
                got = Received(headers, body, client=self.client_address[:2])
                for secret in receiver.secrets:
                    try:
                        Webhook(secret).verify(body, headers)
                        got.verified_by.append(secret)
                    except WebhookVerificationError:
                        pass
                receiver.received.append(got)
                receiver._arrived.set()
                receiver._go.wait(timeout=60)
                status = receiver.script.pop(0) if receiver.script else 200
                answer = b'{"ok": true}' if status < 300 else b"receiver says no"
                self.send_response(status)
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks/casework"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def hold(self):
        self._arrived.clear()
        self._go.clear()

    def wait_for_request(self, timeout: float = 30) -> bool:
        """A failure guard only: returns as soon as a request is in flight."""
        return self._arrived.wait(timeout)

    def release(self):
        self._go.set()

    def close(self):
        self.release()
        self.server.shutdown()
        self.server.server_close()
        self.check_on_stop()


@pytest.fixture
def receiver(settings):
    settings.WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture
def endpoint(receiver, admin_user):
    from casework.outbox.services import endpoint_create

    endpoint, secret = endpoint_create(actor=admin_user, url=receiver.url, description="Core banking")
    receiver.secrets = [secret]
    return endpoint
