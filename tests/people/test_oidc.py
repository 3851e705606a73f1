"""Sign-in through a real OpenID Connect provider (node's oidc-provider on 127.0.0.1).

The provider's side runs over HTTP (httpx follows its redirects and fills its login form);
Casework's side through the Django test client, so that it shares the test's database."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User

from audit.models import AuditEntry
from casework.people.models import ExternalAccount
from casework.people.roles import user_roles
from tests.fakes.oidc_provider import callback_path, oidc_settings, query

pytestmark = pytest.mark.django_db


@pytest.fixture
def idp(settings, oidc_provider):
    oidc_settings(settings, oidc_provider)
    return oidc_provider


def start(client, next_path: str = "/cases/") -> str:
    response = client.get(f"/oidc/authenticate/?next={next_path}")
    assert response.status_code == 302
    return response["Location"]


def sign_in(client, idp_browser, login: str, next_path: str = "/cases/"):
    return client.get(callback_path(idp_browser.authorize(start(client, next_path), login=login)))


def refusals() -> list[str]:
    return [e.data["reason"] for e in AuditEntry.objects.filter(action="auth.oidc_refused").order_by("id")]


def test_an_investigator_signs_in_and_gets_the_role_of_their_group(client, idp, idp_browser):
    idp.account("ines", groups=["casework-investigators", "unrelated"], email="ines@example.org", name="Ines")
    authorize = query(start(client))
    assert authorize["code_challenge_method"] == "S256" and authorize["code_challenge"]
    assert authorize["nonce"] and authorize["state"]

    response = sign_in(client, idp_browser, "ines")

    assert response.status_code == 302 and response["Location"] == "/cases/"
    user = User.objects.get(username="ines")
    assert user_roles(user) == {"investigator"}
    assert user.email == "ines@example.org" and not user.has_usable_password()
    account = ExternalAccount.objects.get(user=user)
    assert (account.oidc_issuer, account.oidc_subject, account.source) == (idp.issuer, "ines", "oidc")
    assert client.get("/cases/").status_code == 200
    login = AuditEntry.objects.get(action="auth.login")
    assert (login.actor, login.data["method"]) == ("ines", "oidc")
    change = AuditEntry.objects.get(action="user.roles_changed")
    assert (change.data["from"], change.data["to"]) == ([], ["investigator"])


def test_roles_are_set_again_at_every_sign_in(client, idp, idp_browser):
    idp.account("mo", groups=["casework-investigators"])
    sign_in(client, idp_browser, "mo")
    client.post("/logout/")
    idp.account("mo", groups=["casework-managers"])

    sign_in(client, idp_browser, "mo")

    assert user_roles(User.objects.get(username="mo")) == {"manager"}
    assert [(e.data["from"], e.data["to"]) for e in AuditEntry.objects.filter(action="user.roles_changed")] == [
        ([], ["investigator"]), (["investigator"], ["manager"])]


def test_someone_in_no_mapped_group_is_refused_and_not_created(client, idp, idp_browser):
    idp.account("guest", groups=["everyone"])

    response = sign_in(client, idp_browser, "guest")

    assert response.status_code == 302 and response["Location"] == "/login/"
    assert not User.objects.filter(username="guest").exists()
    assert refusals() == ["guest is in no group that gives a Casework role"]
    assert client.get("/cases/").status_code == 302  # to the login page


def test_a_forged_state_is_refused(client, idp, idp_browser):
    idp.account("ines", groups=["casework-investigators"])
    location = idp_browser.authorize(start(client), login="ines")
    forged = location.replace(f"state={query(location)['state']}", "state=forged-by-someone-else")

    response = client.get(callback_path(forged))

    assert response["Location"] == "/login/"
    assert not User.objects.filter(username="ines").exists()
    assert refusals() == ["its state is not one this browser's sign-in started (forged or replayed)"]


def test_a_callback_replayed_after_use_is_refused(client, idp, idp_browser):
    idp.account("ines", groups=["casework-investigators"])
    location = idp_browser.authorize(start(client), login="ines")
    assert client.get(callback_path(location))["Location"] == "/cases/"
    client.post("/logout/")

    assert client.get(callback_path(location))["Location"] == "/login/"
    assert "forged or replayed" in refusals()[0]


def test_a_wrong_nonce_is_refused(client, idp, idp_browser):
    idp.account("ines", groups=["casework-investigators"])
    url = start(client)
    # The provider signs whatever nonce the request carried: not the one in our session.
    tampered = url.replace(f"nonce={query(url)['nonce']}", "nonce=not-the-one-we-sent")

    response = client.get(callback_path(idp_browser.authorize(tampered, login="ines")))

    assert response["Location"] == "/login/"
    assert refusals() == ["the ID token's nonce is not the one this sign-in sent"]
    assert not User.objects.filter(username="ines").exists()


def test_an_expired_id_token_is_refused(client, idp, idp_browser):
    idp.account("ines", groups=["casework-investigators"])
    # The provider's clock 1000 s behind: its ID tokens (5 min) expired 700 s ago, well past
    # the 60 s of skew Casework allows; its cookies (an hour and more) still stand.
    idp.set_clock(-1000)

    response = sign_in(client, idp_browser, "ines")

    assert response["Location"] == "/login/"
    assert refusals() == ["the ID token has expired"]


def test_a_token_signed_with_a_key_the_provider_does_not_publish_is_refused(client, settings, idp, idp_browser):
    idp.account("ines", groups=["casework-investigators"])
    # Casework trusts another key set than the one the provider signs with.
    settings.OIDC_OP_JWKS_ENDPOINT = f"{idp.issuer}/test/other-jwks"

    response = sign_in(client, idp_browser, "ines")

    assert response["Location"] == "/login/"
    assert refusals() == ["the ID token is signed with a key the provider does not publish (kid 'casework-test-1')"]


def test_a_rotated_key_is_fetched_again(client, idp, idp_browser):
    from casework.people import oidc

    idp.account("ines", groups=["casework-investigators"])
    # A cached key set from before the provider rotated to its current key.
    jwks_uri = oidc.oidc_setting("OIDC_OP_JWKS_ENDPOINT")
    oidc._jwks[jwks_uri] = idp.http.get("/test/other-jwks").json()

    assert sign_in(client, idp_browser, "ines")["Location"] == "/cases/"
    assert [k["kid"] for k in oidc._jwks[jwks_uri]["keys"]] == ["casework-test-1"]


def test_the_provider_refusing_is_a_refusal(client, idp, idp_browser):
    url = start(client)
    location = idp_browser.authorize(url.replace("client_id=", "prompt=none&client_id="))

    assert client.get(callback_path(location))["Location"] == "/login/"
    assert refusals() == ["the provider answered 'login_required'"]


def test_someone_removed_from_their_groups_loses_access_at_their_next_request(client, settings, idp, idp_browser):
    # Every request renews the sign-in (production: OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS, 300).
    settings.OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = 0
    idp.account("ines", groups=["casework-investigators"])
    sign_in(client, idp_browser, "ines")

    # Still in the group: the provider answers the silent renewal at once, and the page opens.
    renew = client.get("/cases/?status=new")
    assert renew.status_code == 302 and query(renew["Location"])["prompt"] == "none"
    back = client.get(callback_path(idp_browser.authorize(renew["Location"])))
    assert back["Location"] == "/cases/?status=new"

    idp.account("ines", groups=["everyone"])  # removed from the group at the provider
    renew = client.get("/cases/")
    assert renew.status_code == 302 and query(renew["Location"])["prompt"] == "none"
    refused = client.get(callback_path(idp_browser.authorize(renew["Location"])))

    assert refused["Location"] == "/login/"
    assert client.get("/cases/")["Location"].startswith("/login/")
    assert user_roles(User.objects.get(username="ines")) == set()
    assert refusals() == ["ines is in no group that gives a Casework role"]
    assert AuditEntry.objects.filter(action="user.roles_changed").last().data["to"] == []


def test_an_htmx_request_or_a_form_post_renews_before_it_runs(client, settings, idp, idp_browser):
    settings.OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = 0
    idp.account("ines", groups=["casework-investigators"])
    sign_in(client, idp_browser, "ines")

    # An htmx request (a poll) gets nothing, and the page offers to renew and come back.
    htmx = client.get("/cases/", headers={"HX-Request": "true", "HX-Current-URL": "http://testserver/cases/?q=x"})
    assert htmx.status_code == 200 and htmx.content == b"" and htmx["HX-Reswap"] == "none"
    assert json.loads(htmx["HX-Trigger"]) == {
        "casework:renew-sign-in": {"url": "/oidc/authenticate/?next=%2Fcases%2F%3Fq%3Dx"}}
    # Its link renews at once while the provider's session lasts, and comes back to the page.
    renew = client.get("/oidc/authenticate/?next=%2Fcases%2F%3Fq%3Dx")
    assert client.get(callback_path(idp_browser.authorize(renew["Location"])))["Location"] == "/cases/?q=x"
    assert AuditEntry.objects.filter(action="auth.login").count() == 1  # renewed, not a second sign-in
    post = client.post("/notifications/read-all/", headers={"Referer": "http://testserver/notifications/"})
    assert post.status_code == 302 and query(post["Location"])["prompt"] == "none"
    assert client.session["oidc_login_next"] == "/notifications/"
    client.post("/notifications/read-all/", headers={"Referer": "https://evil.example/x"})
    assert client.session["oidc_login_next"] == "/"
    api = client.get("/api/cases/")
    assert api.status_code == 403 and api.json()["refresh_url"].startswith(idp.issuer)


def test_signing_out_ends_the_providers_session_too(client, idp, idp_browser):
    idp.account("ines", groups=["casework-investigators"])
    sign_in(client, idp_browser, "ines")

    response = client.post("/logout/")

    end_session = response["Location"]
    assert end_session.startswith(f"{idp.issuer}/session/end?")
    params = query(end_session)
    assert params["id_token_hint"] and params["post_logout_redirect_uri"] == "http://testserver/login/"
    assert idp_browser.authorize(end_session) == "http://testserver/login/"
    assert client.get("/cases/")["Location"].startswith("/login/")
    # The provider's session is over: a silent sign-in is now refused by the provider.
    url = start(client)
    assert query(idp_browser.authorize(url.replace("client_id=", "prompt=none&client_id=")))["error"] == "login_required"


def test_the_login_page_offers_the_provider(client, idp):
    response = client.get("/login/?next=/cases/")
    page = response.content.decode()
    assert "Sign in with Test IdP" in page and 'href="/oidc/authenticate/?next=/cases/"' in page
    # Signing out redirects to the provider: the pages' form-action allows it.
    form_action = next(d for d in response["Content-Security-Policy"].split(";") if "form-action" in d)
    assert idp.issuer in form_action and "'self'" in form_action


def test_with_oidc_off_nothing_changes(client):
    response = client.get("/login/")
    assert "Sign in with" not in response.content.decode()
    assert "form-action 'self';" in response["Content-Security-Policy"] + ";"
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=x&state=y").status_code == 404


def test_local_passwords_can_be_limited_to_break_glass_users(client, settings, alice, admin_user):
    settings.LOCAL_LOGIN_USERS = ["root"]

    refused = client.post("/login/", {"username": "alice", "password": "alice-pass-123"})
    assert refused.status_code == 200 and "_auth_user_id" not in client.session
    assert AuditEntry.objects.filter(action="auth.local_login_refused", data__username="alice").exists()
    assert client.post("/admin/login/", {"username": "alice", "password": "alice-pass-123"}).status_code == 200
    assert "_auth_user_id" not in client.session

    assert client.post("/login/", {"username": "root", "password": "root-pass-123"}).status_code == 302
    assert client.session["_auth_user_id"] == str(admin_user.pk)


def test_a_right_password_outside_the_break_glass_list_points_to_single_sign_on(client, settings, alice):
    settings.LOCAL_LOGIN_USERS = ["root"]

    right = client.post("/login/", {"username": "alice", "password": "alice-pass-123"})
    page = right.content.decode()
    assert right.status_code == 200 and "_auth_user_id" not in client.session
    assert "single sign-on" in page and "didn&#x27;t match" not in page and "didn't match" not in page

    # A wrong password reads the same for an account that exists and one that does not: no pointer.
    for username in ("alice", "nobody"):
        wrong = client.post("/login/", {"username": username, "password": "not-the-password"}).content.decode()
        assert "single sign-on" not in wrong and "match" in wrong


def test_a_local_account_is_never_taken_over_by_a_provider_login_of_the_same_name(client, idp, idp_browser, alice):
    idp.account("alice", groups=["casework-admins"])

    assert sign_in(client, idp_browser, "alice")["Location"] == "/login/"
    assert refusals() == ["the username 'alice' belongs to an account the provider does not manage"]
    assert user_roles(User.objects.get(username="alice")) == {"investigator"}


def test_someone_scim_provisioned_is_linked_at_first_sign_in_and_refused_once_deactivated(client, idp, idp_browser):
    from casework.people.scim import scim_user_create, scim_user_update

    user = scim_user_create({"userName": "Ines", "emails": [{"value": "ines@example.org"}]})
    idp.account("ines", groups=["casework-investigators"])

    assert sign_in(client, idp_browser, "ines")["Location"] == "/cases/"
    account = ExternalAccount.objects.get(user=user)
    assert (account.source, account.oidc_subject) == ("scim", "ines")
    client.post("/logout/")
    scim_user_update(user, {"active": False})

    assert sign_in(client, idp_browser, "ines")["Location"] == "/login/"
    assert refusals() == ["the account is deactivated"]


def test_a_renewal_after_the_providers_session_ended_asks_to_sign_in_again(client, settings, idp, oidc_provider):
    from tests.fakes.oidc_provider import ProviderBrowser

    settings.OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = 0
    idp.account("ines", groups=["casework-investigators"])
    first = ProviderBrowser(idp)
    sign_in(client, first, "ines")
    first.close()

    renew = client.get("/cases/?status=new")
    other = ProviderBrowser(idp)  # no session at the provider any more
    try:
        response = client.get(callback_path(other.authorize(renew["Location"])))
    finally:
        other.close()

    assert response["Location"] == "/oidc/authenticate/?next=%2Fcases%2F%3Fstatus%3Dnew"
    assert refusals() == ["the provider answered 'login_required'"]
    assert "_auth_user_id" not in client.session


def test_a_provider_that_cannot_be_reached_is_a_message_not_an_error(client, settings, idp):
    import socket

    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    settings.OIDC_ISSUER = f"http://127.0.0.1:{port}"
    from tests.fakes.oidc_provider import _reset_discovery_caches

    _reset_discovery_caches()

    response = client.get("/oidc/authenticate/", follow=True)

    assert response.redirect_chain == [("/login/", 302)]
    assert "Test IdP cannot be reached just now" in response.content.decode()
