"""One signed POST to an endpoint (Standard Webhooks), to an address the SSRF guard checked."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

import certifi
import urllib3
from standardwebhooks import Webhook

from casework.outbox.safety import url_parts, url_resolve_checked


@dataclass
class Answer:
    status: int | None  # None: no HTTP answer (refused, timed out, unsafe address)
    body: str
    error: str
    latency_ms: int

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def signature_header(secrets: list[str], *, msg_id: str, timestamp: datetime, body: str) -> str:
    """`v1,<base64>` per secret, space-separated: during a rotation a receiver holding either
    secret finds a signature it can verify (the spec allows several)."""
    return " ".join(Webhook(secret).sign(msg_id=msg_id, timestamp=timestamp, data=body) for secret in secrets)


def webhook_post(*, url: str, msg_id: str, body: str, secrets: list[str], timeout: float,
                 timestamp: datetime, keep_chars: int) -> Answer:
    """POST `body` once. No redirect is followed (a 3xx is not a 2xx), no retry here: the
    outbox schedules them. `timestamp` is when the request leaves (the signature's time)."""
    from django.core.exceptions import ValidationError

    started = time.monotonic()

    def took() -> int:
        return int((time.monotonic() - started) * 1000)

    try:
        addresses = url_resolve_checked(url)
    except ValidationError as exc:
        return Answer(None, "", f"Refused: {'; '.join(exc.messages)}"[:300], took())
    scheme, host, port = url_parts(url)
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = {
        "content-type": "application/json",
        "user-agent": "Casework-Webhooks/1",
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(timestamp.timestamp())),
        "webhook-signature": signature_header(secrets, msg_id=msg_id, timestamp=timestamp, body=body),
        "host": host if port in (80, 443) else f"{host}:{port}",
    }
    pool_kwargs = {"port": port, "timeout": urllib3.Timeout(total=timeout), "retries": False, "maxsize": 1}
    if scheme == "https":
        pool = urllib3.HTTPSConnectionPool(addresses[0], server_hostname=host, assert_hostname=host,
                                           cert_reqs="CERT_REQUIRED", ca_certs=certifi.where(), **pool_kwargs)
    else:
        pool = urllib3.HTTPConnectionPool(addresses[0], **pool_kwargs)
    try:
        response = pool.urlopen("POST", path, body=body.encode(), headers=headers, redirect=False,
                                preload_content=False, assert_same_host=False)
        try:
            raw = response.read(keep_chars * 4, decode_content=True)
        finally:
            response.release_conn()
        return Answer(response.status, raw.decode("utf-8", "replace")[:keep_chars], "", took())
    except urllib3.exceptions.HTTPError as exc:
        return Answer(None, "", f"{type(exc).__name__}: {exc}"[:300], took())
    finally:
        pool.close()
