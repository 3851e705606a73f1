"""The Celery app. Workers: `celery -A casework worker` (make run starts one)."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "casework.settings")

app = Celery("casework")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
