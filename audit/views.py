"""/audit/key/: the public key that signs the audit checkpoints, the retired ones, and the newest
checkpoint, so that anyone holding a case report or a checkpoint can check it offline."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from audit.checkpoint_services import checkpoint_status


@require_GET
@login_required
def key(request):
    return render(request, "audit/key.html", {
        "status": checkpoint_status(),
        "every_entries": settings.AUDIT_CHECKPOINT_EVERY_ENTRIES,
        "every_minutes": settings.AUDIT_CHECKPOINT_EVERY_MINUTES,
        "origin": settings.AUDIT_CHECKPOINT_ORIGIN,
        "webhook": bool(settings.AUDIT_CHECKPOINT_WEBHOOK_URL),
    })
