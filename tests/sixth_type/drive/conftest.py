"""These tests need the sixth type installed (tests.sixth_type.settings); under the project's
own settings, as in the normal suite, they are not collected: tests/sixth_type/test_sixth_type.py
runs them in a process of their own."""

from __future__ import annotations

from django.conf import settings

collect_ignore_glob = [] if "tests.sixth_type" in settings.INSTALLED_APPS else ["test_*.py"]
