"""The guard of tests/fakes/guard.py (issue 44, point 4): a fake server or receiver that failed
inside itself fails its test, however it was started, unless the test failed already."""

from __future__ import annotations

import shutil
import smtplib
import subprocess
import sys
import textwrap
from email.message import EmailMessage
from pathlib import Path

import httpx
import pytest

from tests.fakes.guard import FakeServerError
from tests.support.smtp import SmtpServer

ROOT = Path(__file__).resolve().parent.parent


def _run_pytest(tmp_path: Path, source: str, *plugins: str) -> subprocess.CompletedProcess:
    """Run one planted test module in a fresh pytest, without the project's settings."""
    test = tmp_path / "test_planted.py"
    test.write_text(textwrap.dedent(source))
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:django", "-p", "no:env",
            "-p", "no:randomly", "--rootdir", str(tmp_path), "-c", str(tmp_path / "none.ini")]
    for plugin in plugins:
        args += ["-p", plugin]
    (tmp_path / "none.ini").write_text("[pytest]\n")
    return subprocess.run([*args, str(test)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


PLANTED = """
    import httpx
    from tests.fakes.llm_servers import FakeOpenAIServer

    def crashing_handler(body):
        raise KeyError("choices")

    def test_started_and_never_stopped():
        server = FakeOpenAIServer().start()
        server.handler = crashing_handler
        answer = httpx.post(server.base_url + "/chat/completions", json={"messages": []}, timeout=10)
        assert answer.status_code == 500  # what a product's fallback would absorb

    def test_a_quiet_fake_passes():
        server = FakeOpenAIServer().start()
        assert httpx.post(server.base_url + "/chat/completions", json={"messages": []}, timeout=10).is_success
"""


def test_the_plugin_fails_a_passing_test_whose_fake_recorded_an_error(tmp_path):
    without = _run_pytest(tmp_path, PLANTED)
    assert without.returncode == 0, without.stdout + without.stderr  # what happened before the guard
    guarded = _run_pytest(tmp_path, PLANTED, "tests.fakes.guard")
    assert guarded.returncode == 1, guarded.stdout + guarded.stderr
    assert "1 failed, 1 passed" in guarded.stdout
    assert "FAILED" in guarded.stdout and "test_started_and_never_stopped" in guarded.stdout
    assert "KeyError: 'choices'" in guarded.stdout


def test_the_plugin_leaves_an_already_failing_test_its_own_failure(tmp_path):
    planted = PLANTED.replace("assert answer.status_code == 500", "assert answer.status_code == 200")
    guarded = _run_pytest(tmp_path, planted, "tests.fakes.guard")
    assert "1 failed, 1 passed" in guarded.stdout, guarded.stdout + guarded.stderr
    assert "assert 500 == 200" in guarded.stdout  # the test's own failure is the one reported
    assert "fake server errors" in guarded.stdout and "KeyError: 'choices'" in guarded.stdout


def test_the_smtp_server_fails_on_close_when_its_handler_raised():
    server = SmtpServer()
    server.received = None  # handle_DATA's append now raises AttributeError
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "a@example.org", "b@example.org", "hello"
    message.set_content("body")
    with smtplib.SMTP("127.0.0.1", server.port, timeout=10) as client, pytest.raises(smtplib.SMTPDataError):
        client.send_message(message)
    with pytest.raises(FakeServerError, match="(?s)SMTP server.*AttributeError"):
        server.close()


def test_the_webhook_receiver_fails_on_close_when_its_handler_raised():
    from tests.outbox.conftest import Receiver

    receiver = Receiver()
    receiver.script = [None]  # answering a status of None raises inside the handler
    with pytest.raises(httpx.TransportError):
        httpx.post(receiver.url, content=b"{}", timeout=10)
    with pytest.raises(FakeServerError, match="(?s)webhook receiver.*TypeError"):
        receiver.close()


def test_an_oidc_provider_that_never_says_ready_fails_instead_of_hanging(tmp_path):
    """The hung script can never say READY, so its 1 s start-up deadline decides nothing about
    speed: on any machine it is refused, only sooner or later."""
    from tests.fakes.oidc_provider import OIDCProvider

    if not shutil.which("node"):
        # As the oidc_provider fixture: `make test` and .ci/run install node's provider first.
        pytest.fail("node is needed (bash bin/oidc-provider installs the provider's set-up)")

    hung = tmp_path / "hung.mjs"
    hung.write_text("setInterval(() => {}, 1000);  // listens on nothing, prints nothing\n")
    with pytest.raises(RuntimeError, match=r"did not start within 1 s \(it said nothing\)"):
        OIDCProvider(script=hung, startup_seconds=1)
    dead = tmp_path / "dead.mjs"
    dead.write_text("console.error('no such module'); process.exit(3);\n")
    with pytest.raises(RuntimeError, match=r"(?s)it said ''.*no such module"):
        OIDCProvider(script=dead, startup_seconds=30)
