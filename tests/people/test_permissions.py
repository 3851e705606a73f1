"""Who may reach what: anonymous people are sent to log in (or get 401 from the API),
managers do not see the investigators' queue, only admins use the Django admin."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from casework.cases.services import case_create
from casework.security.models import ApiToken
from casework.security.tokens import api_token_create, token_digest

pytestmark = pytest.mark.django_db


@pytest.fixture
def case(alice):
    return case_create(actor=alice, case_type="fraud_alert", title="Deposit cycling")


# --- anonymous ---------------------------------------------------------------------------

def test_anonymous_is_sent_to_login_from_the_queue(client):
    response = client.get("/cases/")
    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/cases/"


def test_anonymous_is_sent_to_login_from_a_case_page(client, case):
    response = client.get(f"/cases/{case.reference}/")
    assert response.status_code == 302
    assert response["Location"] == f"/login/?next=/cases/{case.reference}/"


def test_anonymous_is_sent_to_login_from_home(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_anonymous_posts_are_refused_too(client, case):
    response = client.post(f"/cases/{case.reference}/close/", {"outcome": "legit", "reason": "x"})
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
    case.refresh_from_db()
    assert not case.is_closed


def test_anonymous_gets_401_json_from_the_api(client):
    response = client.get("/api/cases/")
    assert response.status_code == 401
    assert response["Content-Type"].startswith("application/json")
    assert "credentials" in response.json()["detail"]
    assert response.has_header("WWW-Authenticate")


def test_anonymous_gets_401_from_the_api_schema(client):
    assert client.get("/api/schema/").status_code == 401


# --- roles -------------------------------------------------------------------------------

def test_a_manager_is_refused_the_queue(client, mona):
    client.force_login(mona)
    response = client.get("/cases/")
    assert response.status_code == 403
    assert b"Only investigators" in response.content


def test_a_manager_is_refused_a_case_page(client, mona, case):
    client.force_login(mona)
    assert client.get(f"/cases/{case.reference}/").status_code == 403


def test_a_manager_is_refused_the_cases_api(mona):
    api = APIClient()
    api.force_authenticate(mona)
    response = api.get("/api/cases/")
    assert response.status_code == 403
    assert response.json()["detail"] == "Only investigators can see and act on cases."


def test_an_investigator_cannot_use_the_admin(alice_client):
    response = alice_client.get("/admin/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_an_admin_can_use_the_admin(client, admin_user):
    client.force_login(admin_user)
    response = client.get("/admin/")
    assert response.status_code == 200
    assert b"Casework administration" in response.content


def test_home_is_the_dashboard_for_an_investigator(alice_client):
    response = alice_client.get("/")
    assert response.status_code == 200
    assert b'id="chart-by-type"' in response.content


def test_home_tells_someone_without_a_role_to_ask_for_one(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("nobody", password="x"))
    response = client.get("/", follow=True)
    assert response.status_code == 200
    assert b"no role in Casework" in response.content


# --- login and logout --------------------------------------------------------------------

def test_the_login_page_has_the_products_look(client):
    response = client.get("/login/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Log in to Casework" in html
    assert "vendor/pico/pico.min.css" in html
    assert "css/casework.css" in html
    assert 'name="csrfmiddlewaretoken"' in html


def test_login_with_good_credentials_lands_on_the_page_asked_for(client, alice):
    response = client.post("/login/?next=/cases/", {"username": "alice", "password": "alice-pass-123",
                                                    "next": "/cases/"})
    assert response.status_code == 302
    assert response["Location"] == "/cases/"
    assert client.get("/cases/").status_code == 200


def test_login_with_a_bad_password_shows_an_error(client, alice):
    response = client.post("/login/", {"username": "alice", "password": "wrong"})
    assert response.status_code == 200
    assert b"didn&#x27;t match" in response.content or b"didn't match" in response.content
    assert client.get("/cases/").status_code == 302


def test_login_refuses_to_redirect_off_site(client, alice):
    response = client.post("/login/", {"username": "alice", "password": "alice-pass-123",
                                       "next": "https://evil.example.com/"})
    assert response.status_code == 302
    assert response["Location"] == "/"


def test_logout_ends_the_session(alice_client):
    response = alice_client.post("/logout/")
    assert response.status_code == 302
    assert response["Location"] == "/login/"
    assert alice_client.get("/cases/").status_code == 302


# --- API tokens --------------------------------------------------------------------------

def test_a_token_authenticates_the_api(alice, case):
    _, secret = api_token_create(actor="system", user=alice)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    response = api.get("/api/cases/")
    assert response.status_code == 200
    assert [c["reference"] for c in response.json()["results"]] == [case.reference]


def test_a_wrong_token_gets_401(alice):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    response = api.get("/api/cases/")
    assert response.status_code == 401
    assert response.json()["detail"] == "Invalid token."


def test_manage_py_creates_a_token(alice):
    out = io.StringIO()
    call_command("api_token", "alice", stdout=out)
    token = ApiToken.objects.get(user=alice)
    assert token.digest == token_digest(out.getvalue().strip())
