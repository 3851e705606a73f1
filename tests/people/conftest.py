from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _fast_test_settings(settings):
    # PBKDF2's million rounds cost ~0.3 s per user; these tests are not about hashing.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # Without autorefresh WhiteNoise indexes every static file each time a test client
    # builds its middleware, i.e. once per test.
    settings.WHITENOISE_AUTOREFRESH = True

from tests.fakes.oidc_provider import idp_browser, oidc_provider  # noqa: E402,F401 - fixtures
