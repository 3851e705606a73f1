"""A real OpenID Connect provider on 127.0.0.1 for the tests: node's oidc-provider
(tests/fakes/oidc/provider.mjs), installed by bin/oidc-provider (`make test` and .ci/run call it).

`oidc_provider` (session fixture) starts it once; `oidc_settings(...)` registers a client
for one redirect URI through the provider's dynamic client registration and points Casework's
OIDC_* settings at it for the test. Helpers drive the provider's own login form with an HTTP
client (httpx), as a browser would.
"""

from __future__ import annotations

import queue
import re
import shutil
import subprocess
import threading
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import pytest

HERE = Path(__file__).resolve().parent / "oidc"
ROLES = {"casework-investigators": "investigator", "casework-managers": "manager",
         "casework-release": "release_manager", "casework-admins": "admin"}


# A failure guard only: the provider says READY in about a second.
STARTUP_SECONDS = 60


class OIDCProvider:
    def __init__(self, *, script: Path = HERE / "provider.mjs", startup_seconds: float = STARTUP_SECONDS) -> None:
        self.process = subprocess.Popen(["node", str(script)], cwd=HERE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        # Its first line, read on a thread so that a provider that never prints it (hung, or
        # waiting on something) fails the session after startup_seconds instead of hanging it.
        # The threads then keep draining its output so that a full pipe never blocks it.
        first: queue.Queue[str] = queue.Queue()

        def read_stdout() -> None:
            first.put(self.process.stdout.readline())  # "" at EOF: it died
            self.process.stdout.read()

        threading.Thread(target=read_stdout, daemon=True).start()
        try:
            line = first.get(timeout=startup_seconds)
        except queue.Empty:
            line = None
        if line is None or not line.startswith("READY "):
            self.process.kill()
            self.process.wait(timeout=10)
            said = "nothing" if line is None else repr(line)
            raise RuntimeError(f"The OIDC provider did not start within {startup_seconds:g} s (it said {said}): "
                               f"{self.process.stderr.read()[-2000:]}")
        self.issuer = line.split()[1]
        threading.Thread(target=self.process.stderr.read, daemon=True).start()
        self.http = httpx.Client(base_url=self.issuer, timeout=10)
        self._clients: dict[str, tuple[str, str]] = {}

    def stop(self) -> None:
        self.http.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def account(self, login: str, *, groups: list[str], email: str = "", name: str = "") -> None:
        """Create or change an account: what its next token or silent renewal will say."""
        self.http.put(f"/test/accounts/{login}", json={
            "email": email or f"{login}@example.org", "name": name or login.title(), "groups": groups,
        }).raise_for_status()

    def set_clock(self, offset_seconds: int) -> None:
        self.http.post("/test/clock", json={"offset": offset_seconds}).raise_for_status()

    def client_for(self, base_url: str) -> tuple[str, str]:
        """A client registered (RFC 7591) for Casework served at `base_url`."""
        if base_url not in self._clients:
            response = self.http.post("/reg", json={
                "redirect_uris": [f"{base_url}/oidc/callback/"],
                "post_logout_redirect_uris": [f"{base_url}/login/"],
                "token_endpoint_auth_method": "client_secret_post",
                "scope": "openid email profile groups",
            })
            response.raise_for_status()
            body = response.json()
            self._clients[base_url] = (body["client_id"], body["client_secret"])
        return self._clients[base_url]


def _reset_discovery_caches() -> None:
    from casework.people import oidc

    with oidc._lock:
        oidc._metadata.clear()
        oidc._jwks.clear()


def oidc_settings(settings, provider: OIDCProvider, base_url: str = "http://testserver") -> None:
    """Casework configured for `provider` in this test (the `settings` fixture undoes it)."""
    client_id, secret = provider.client_for(base_url)
    settings.OIDC_RP_CLIENT_ID = client_id
    settings.OIDC_RP_CLIENT_SECRET = secret
    settings.OIDC_ISSUER = provider.issuer
    settings.OIDC_RP_SCOPES = "openid email profile groups"
    settings.OIDC_GROUP_ROLES = dict(ROLES)
    settings.OIDC_PROVIDER_NAME = "Test IdP"
    _reset_discovery_caches()


class ProviderBrowser:
    """The part of a browser that talks to the provider: follows its redirects, fills its
    login form, and hands back the redirect to Casework's callback (which the Django test
    client then follows, so that Casework's side runs in the test's transaction)."""

    def __init__(self, provider: OIDCProvider) -> None:
        self.provider = provider
        self.http = httpx.Client(timeout=10)

    def authorize(self, url: str, *, login: str | None = None) -> str:
        """Open an authorization URL; sign in as `login` when asked; return the callback URL."""
        response = self.http.get(url)
        for _ in range(10):
            if response.status_code in (302, 303):
                location = urljoin(str(response.url), response.headers["location"])
                if not location.startswith(self.provider.issuer):
                    return location
                response = self.http.get(location)
                continue
            if response.status_code == 200 and 'name="prompt" value="login"' in response.text:
                if login is None:
                    raise AssertionError("The provider asked for a login nobody gave.")
                action = re.search(r'<form[^>]*action="([^"]+)"', response.text).group(1)
                response = self.http.post(urljoin(str(response.url), action),
                                          data={"prompt": "login", "login": login, "password": "any"})
                continue
            if response.status_code == 200 and "<form" in response.text and "logout" in response.text.lower():
                # RP-initiated logout: the provider asks to confirm signing out.
                form = re.search(r'<form[^>]*action="([^"]+)"[^>]*>(.*?)</form>', response.text, re.S)
                fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', form.group(2)))
                fields["logout"] = "yes"
                response = self.http.post(urljoin(str(response.url), form.group(1)), data=fields)
                continue
            raise AssertionError(f"Unexpected answer from the provider: {response.status_code} {response.text[:500]}")
        raise AssertionError("Too many redirects at the provider.")

    def close(self) -> None:
        self.http.close()


def callback_path(location: str) -> str:
    parts = urlsplit(location)
    return f"{parts.path}?{parts.query}"


def query(location: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


@pytest.fixture(scope="session")
def oidc_provider():
    if not shutil.which("node") or not (HERE / "node_modules" / "oidc-provider").is_dir():
        # `make test` and .ci/run install it first: missing, it is a broken set-up, never a pass.
        pytest.fail("node and tests/fakes/oidc/node_modules are needed (bash bin/oidc-provider installs them)")
    provider = OIDCProvider()
    yield provider
    provider.stop()


@pytest.fixture
def idp_browser(oidc_provider):
    browser = ProviderBrowser(oidc_provider)
    yield browser
    browser.close()
    oidc_provider.set_clock(0)
