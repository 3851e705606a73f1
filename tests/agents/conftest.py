from __future__ import annotations

import pytest

from agents.llm.registry import reset_provider
from tests.fakes.fixtures import fake_anthropic, fake_openai  # noqa: F401 - fixtures


@pytest.fixture(autouse=True)
def _fresh_provider():
    """Every test builds its provider from its own settings (offline unless a fake says otherwise)."""
    reset_provider()
    yield
    reset_provider()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # PBKDF2's rounds cost ~0.3 s per user; these tests are not about hashing.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
