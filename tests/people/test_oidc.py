"""Sign-in through a real OpenID Connect provider (node's oidc-provider on 127.0.0.1).

The provider's side runs over HTTP (httpx follows its redirects and fills its login form);
Casework's side through the Django test client, so that it shares the test's database."""

from __future__ import annotations

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
