"""A real SMTP server (aiosmtpd) on 127.0.0.1, on a port the OS chooses, that keeps what it
receives and can refuse recipients (550) while `refuse` is set. A handler that raises (aiosmtpd
answers the client 500) is recorded, and close() raises it (tests/fakes/guard.py)."""

from __future__ import annotations

import asyncio
import email
import email.policy
import threading

from aiosmtpd.smtp import SMTP

from tests.fakes.guard import RecordsErrors


class SmtpServer(RecordsErrors):
    fake_name = "SMTP server"

    def __init__(self):
        self._init_errors()
        self.received: list[email.message.EmailMessage] = []
        self.refuse = ""  # e.g. "550 5.1.1 <x@example.com>: no such user"
        server = self

        class Handler:
            async def handle_RCPT(self, smtp, session, envelope, address, rcpt_options):  # noqa: N802 - aiosmtpd's name
                if server.refuse:
                    return server.refuse
                envelope.rcpt_tos.append(address)
                return "250 OK"

            async def handle_DATA(self, smtp, session, envelope):  # noqa: N802 - aiosmtpd's name
                try:
                    server.received.append(email.message_from_bytes(envelope.content, policy=email.policy.default))
                except Exception as exc:
                    server.record_error(exc)
                    raise
                return "250 Message accepted for delivery"

            async def handle_exception(self, error):
                # aiosmtpd calls this for whatever a handler raised before answering 500.
                if not server.errors or server.errors[-1] is not error:
                    server.record_error(error)
                return "500 The fake SMTP server failed"

        # The loop is made and run on its own thread (the test's thread may run one already:
        # Playwright's).
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def serve():
            asyncio.set_event_loop(self.loop)
            self.server = self.loop.run_until_complete(
                self.loop.create_server(lambda: SMTP(Handler(), hostname="smtp.test"), "127.0.0.1", 0))
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()
        if not ready.wait(timeout=10):
            raise RuntimeError("The SMTP server did not start.")
        self.port = self.server.sockets[0].getsockname()[1]

    def close(self):
        async def stop():
            self.server.close()
            await self.server.wait_closed()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()
        self.check_on_stop()
