"""Browser tests: Debian's Chromium driven by Playwright's sync API against live_server.

Fixtures for every browser test:
  browser          one headless Chromium for the whole session
  page             a fresh context (own cookies) and page per test, closed afterwards
  log_in(page, user, password)  signs in (a session cookie; form=True: the login form), then opens next_path

Mark browser tests `@pytest.mark.e2e` and `@pytest.mark.django_db(transaction=True)`: the
live server runs in another thread and only sees committed rows.
"""

from __future__ import annotations

import os
import shutil

import pytest

# Playwright's sync API runs an asyncio loop in this thread; Django would otherwise refuse
# the test's own ORM calls ("You cannot call this from an async context").
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TIMEOUT_MS = 10_000
# A failure guard only, for what a page shows by polling (htmx, every 2 to 5 s) after a worker's
# work ended: the next poll asked after the work, and its answer, on a machine as loaded as the
# suite makes it (expect's own 5 s failed twice in six full runs: a poll asked while the work
# ran was answered after it with the old state, and the next came too late). It is not a claim
# about speed: the assertion becomes true at the next poll, whatever the machine.
POLL_GUARD_MS = 60_000


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # PBKDF2's million rounds cost ~0.3 s per user; these tests are not about hashing.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="session")
def browser():
    if not shutil.which(CHROMIUM):
        message = f"{CHROMIUM} is not installed (apt-get install chromium; .ci/run does it)"
        if os.environ.get("CI"):
            pytest.fail(message)  # in CI a missing browser is a broken set-up, never a pass
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.js_errors = errors
    # Every browser test is also a Content-Security-Policy test: Chromium reports each script
    # or style the policy blocked on the console, and any such report fails the test.
    blocked: list[str] = []
    page.on("console", lambda message: blocked.append(f"{page.url}: {message.text}")
            if "Content Security Policy" in message.text else None)
    yield page
    context.close()
    assert not blocked, "The Content-Security-Policy blocked something:\n" + "\n".join(blocked)


@pytest.fixture
def log_in(live_server):
    """log_in(page, username, password, next_path="/"): signed in, then at next_path; returns
    where the browser landed. By a session cookie: the password is checked and the session made
    as the login view makes it (django.contrib.auth.login: the signal, the audit entry), without
    the login page's render, its POST and the landing page each test then leaves (issue 44).
    `form=True` goes through the real form instead (tests/e2e/test_foundation_browser.py
    signs in that way, and test_a_bad_password_keeps_you_on_the_login_page refuses one)."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    def do_log_in(page, username: str, password: str, next_path: str = "/", form: bool = False) -> str:
        if form:
            page.goto(f"/login/?next={next_path}")
            page.get_by_label("Username").fill(username)
            page.get_by_label("Password").fill(password)
            with page.expect_navigation():
                page.get_by_role("button", name="Log in").click()
        else:
            user = get_user_model().objects.get(username=username)
            assert user.is_active and user.check_password(password), f"login as {username} failed"
            client = Client()
            client.force_login(user)
            page.context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "url": live_server.url,
                                       "value": client.cookies[settings.SESSION_COOKIE_NAME].value}])
            page.goto(next_path)
        assert "/login/" not in page.url, f"login as {username} failed"
        return page.url

    return do_log_in


from tests.fakes.oidc_provider import oidc_provider  # noqa: E402,F401 - fixture (the OIDC sign-in test)
