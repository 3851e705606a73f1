"""The project's settings with the sixth case type installed among the five: only the tests in
tests/sixth_type/drive/ run with these (tests/sixth_type/test_sixth_type.py runs them)."""

from casework.settings import *  # noqa: F403
from casework.settings import INSTALLED_APPS as _APPS

INSTALLED_APPS = [*_APPS]
# After the last type's app, before the shared apps that add a tab to every type's page.
INSTALLED_APPS.insert(INSTALLED_APPS.index("casework.releases") + 1, "tests.sixth_type")
