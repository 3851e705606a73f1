"""Signing in through the organisation's identity provider, in a real browser: a real
OpenID Connect provider (node's oidc-provider) on 127.0.0.1, its own login page, and back."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from audit.models import AuditEntry
from casework.people.roles import user_roles
from tests.fakes.oidc_provider import oidc_settings

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_an_investigator_signs_in_through_the_provider_and_out_of_both(page, live_server, settings, oidc_provider):
    oidc_settings(settings, oidc_provider, base_url=live_server.url)
    oidc_provider.account("ines", groups=["casework-investigators"], email="ines@example.org", name="Ines Ortiz")

    page.goto("/cases/")
    assert "/login/?next=/cases/" in page.url
    page.get_by_role("link", name="Sign in with Test IdP").click()
    page.wait_for_url(f"{oidc_provider.issuer}/interaction/**")
    page.fill("input[name=login]", "ines")
    page.fill("input[name=password]", "any password: the test provider checks none")
    page.get_by_role("button", name="Sign-in").click()
    page.wait_for_url(f"{live_server.url}/cases/")

    assert page.get_by_role("heading", name="Case queue").is_visible()
    assert user_roles(User.objects.get(username="ines")) == {"investigator"}
    assert AuditEntry.objects.filter(action="auth.login", actor="ines", data__method="oidc").exists()

    # Five minutes on (OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS): the sign-in is due for renewal. An
    # htmx update gets nothing and the page offers to renew, leaving the page as it is.
    from django.contrib.sessions.backends.db import SessionStore

    cookie = next(c for c in page.context.cookies() if c["name"] == "sessionid")
    session = SessionStore(cookie["value"])
    session["oidc_id_token_expiration"] = 0
    session.save()
    page.select_option("select[name=status]", "in_progress")
    renew = page.get_by_role("link", name="Renew sign-in")
    renew.wait_for()
    renew.click()  # the provider's session answers at once: back to the same page
    page.wait_for_url(f"{live_server.url}/cases/**")
    assert SessionStore(cookie["value"])["oidc_id_token_expiration"] > 0
    assert not page.get_by_role("link", name="Renew sign-in").is_visible()

    # Signing out of Casework signs out of the provider too (it asks to confirm).
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{oidc_provider.issuer}/session/end**")
    page.get_by_role("button", name="Yes, sign me out").click()
    page.wait_for_url(f"{live_server.url}/login/")
    page.goto("/cases/")
    assert "/login/" in page.url
