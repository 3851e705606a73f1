"""/notifications/: the inbox of notifications, opening one, and the email preferences."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from casework.cases.notifications import selectors, services
from casework.cases.notifications.models import Notification, NotificationPreference

INBOX_SIZE = 100


@require_GET
def inbox(request):
    show = request.GET.get("show", "all")
    if show not in ("all", "unread"):
        return render(request, "notifications/inbox.html", {"error": "show: choose all or unread."}, status=400)
    notes = selectors.notifications_for(request.user)
    if show == "unread":
        notes = notes.filter(read_at__isnull=True)
    return render(request, "notifications/inbox.html", {"notifications": notes[:INBOX_SIZE], "show": show})


@require_GET
def notification_open(request, pk: int):
    note = get_object_or_404(Notification, pk=pk)
    services.notification_mark_read(user=request.user, notification=note)
    return redirect(note.url or "notifications:inbox")


@require_POST
def read_all(request):
    services.notifications_mark_all_read(user=request.user)
    return redirect("notifications:inbox")


class PreferenceForm(forms.ModelForm):
    class Meta:
        model = NotificationPreference
        fields = list(NotificationPreference.GROUPS)


@require_http_methods(["GET", "POST"])
def preferences(request):
    current = NotificationPreference.objects.filter(user=request.user).first()
    form = PreferenceForm(request.POST or None, instance=current)
    if request.method == "POST" and form.is_valid():
        try:
            services.preference_update(actor=request.user, **{f: form.cleaned_data[f] for f in form.fields})
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, "Your email preferences are saved.")
            return redirect("notifications:preferences")
    return render(request, "notifications/preferences.html", {"form": form, "has_email": bool(request.user.email)},
                  status=400 if form.errors else 200)
