from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "casework.settings")
application = get_wsgi_application()


def _settle() -> None:
    """Load the URL patterns (and with them every view) now, then take what the process holds
    out of the garbage collector's passes (casework/ops/gc_tuning.py)."""
    from django.urls import get_resolver

    from casework.ops.gc_tuning import gc_tune

    get_resolver().url_patterns  # noqa: B018 (imports every view module)
    gc_tune()


_settle()
