"""A path with any character answers as the page would without tracing: the request span's URL
is read the way WSGI gives it (opentelemetry-python-contrib#3237 made it a 500)."""

from __future__ import annotations

import pytest

from casework.people.roles import INVESTIGATOR
from casework.people.services import user_create
from casework.security.tokens import api_token_create
from tests.conftest import in_every_team


@pytest.mark.django_db
@pytest.mark.parametrize("path", [
    "/api/cases/%F0%9F%98%84/",  # an emoji: past latin-1
    "/api/cases/%C3%A4r%C2%BD%C3%84%F0%B5%83%B1p%27%C3%B0U%10G/",  # what schemathesis sent
    "/cases/%E2%82%AC/",
])
def test_a_path_past_latin_1_is_a_404_not_a_500(client, path):
    user = in_every_team(user_create(actor="system", username="fuzz", password="fuzz-pass-123", role=INVESTIGATOR))
    _, secret = api_token_create(actor="system", user=user, name="paths")
    client.force_login(user)
    assert client.get(path, HTTP_AUTHORIZATION=f"Token {secret}").status_code == 404
