"""Endpoints are managed here as through the API: every change goes through the services
(checked, audited); a secret is shown once, in the message after creating or rotating."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.utils.html import format_html

from audit.admin_scope import CaseScopedAdmin
from casework.case_type_source import case_types_known
from casework.errors import DomainError
from casework.outbox import services
from casework.outbox.catalogue import EVENT_TYPES
from casework.outbox.models import Delivery, DeliveryAttempt, Endpoint, OutboundEmail, OutboxEvent


def _case_type_choices():
    return list(case_types_known().items())


def _event_type_choices():
    # Read when the form is built: case types register their events from AppConfig.ready,
    # which may run after this module is imported (the admin autodiscovers first).
    return [(n, n) for n in EVENT_TYPES]


class EndpointForm(forms.ModelForm):
    url = forms.URLField(max_length=500, assume_scheme="https")
    event_types = forms.MultipleChoiceField(choices=_event_type_choices, required=False,
                                            widget=forms.CheckboxSelectMultiple, help_text="None ticked: every type.")
    case_types = forms.MultipleChoiceField(choices=_case_type_choices, required=False,
                                           widget=forms.CheckboxSelectMultiple, help_text="None ticked: every type.")

    class Meta:
        model = Endpoint
        fields = ["url", "description", "enabled", "event_types", "case_types", "timeout_seconds", "owner", "team"]


class DeliveryAttemptInline(admin.TabularInline):
    model = DeliveryAttempt
    extra = 0
    can_delete = False
    fields = readonly_fields = ("number", "at", "status", "latency_ms", "error", "response")

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    form = EndpointForm
    list_display = ("id", "url", "description", "enabled", "breaker", "paused_until", "consecutive_failures",
                    "owner")
    list_filter = ("enabled",)
    readonly_fields = ("disabled_reason", "breaker", "consecutive_failures", "paused_until", "probe_until",
                       "previous_secret_expires_at", "created_at", "updated_at")
    actions = ["rotate_secret", "replay_failed"]

    @admin.display(description="circuit breaker")
    def breaker(self, obj):
        from django.utils import timezone

        return obj.breaker_state(timezone.now())

    def save_model(self, request, obj, form, change):
        data = {name: form.cleaned_data[name] for name in EndpointForm.Meta.fields}
        try:
            if change:
                services.endpoint_update(actor=request.user, endpoint=obj, **data)
            else:
                endpoint, secret = services.endpoint_create(actor=request.user, **data)
                obj.pk = endpoint.pk
                self._show_secret(request, endpoint, secret)
        except ValidationError as exc:
            # Checked in the form's clean() below; a race (DNS changed since) lands here.
            self.message_user(request, "; ".join(exc.messages), messages.ERROR)

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)

        class Checked(form):
            def clean(inner):
                cleaned = super().clean()
                url = cleaned.get("url")
                if url and (obj is None or url != obj.url):
                    from casework.outbox.safety import url_resolve_checked

                    try:
                        url_resolve_checked(url)
                    except ValidationError as exc:
                        inner.add_error("url", exc.message_dict.get("url", exc.messages))
                return cleaned

        return Checked

    def _show_secret(self, request, endpoint, secret: str) -> None:
        self.message_user(request, format_html(
            "Signing secret of {} (shown once, copy it now): <code>{}</code>", endpoint, secret), messages.WARNING)

    def has_delete_permission(self, request, obj=None):
        return False  # disable instead: the delivery log stays

    @admin.action(description="Rotate the signing secret (the old one signs too for a while)")
    def rotate_secret(self, request, queryset):
        for endpoint in queryset:
            endpoint, secret = services.endpoint_rotate_secret(actor=request.user, endpoint=endpoint)
            self._show_secret(request, endpoint, secret)

    @admin.action(description="Replay every dead delivery")
    def replay_failed(self, request, queryset):
        total = sum(services.endpoint_replay_failed(actor=request.user, endpoint=e) for e in queryset)
        self.message_user(request, f"{total} dead deliveries sent again.")


@admin.register(Delivery)
class DeliveryAdmin(CaseScopedAdmin, admin.ModelAdmin):
    list_display = ("id", "event", "endpoint", "state", "attempts", "next_attempt_at", "last_status",
                    "last_latency_ms", "created_at")
    list_filter = ("state", "endpoint")
    search_fields = ("event__id", "event__type", "event__case__reference")
    list_select_related = ("event", "endpoint")
    inlines = [DeliveryAttemptInline]
    actions = ["replay"]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in Delivery._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Replay the selected deliveries")
    def replay(self, request, queryset):
        done = 0
        for delivery in queryset:
            try:
                services.delivery_replay(actor=request.user, delivery=delivery)
                done += 1
            except DomainError as exc:
                self.message_user(request, f"{delivery}: {exc.message}", messages.ERROR)
        self.message_user(request, f"{done} deliveries sent again.")


@admin.register(OutboxEvent)
class OutboxEventAdmin(CaseScopedAdmin, admin.ModelAdmin):
    list_display = ("id", "type", "version", "case", "created_at")
    list_filter = ("type",)
    search_fields = ("id", "case__reference")
    list_select_related = ("case",)

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in OutboxEvent._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(OutboundEmail)
class OutboundEmailAdmin(CaseScopedAdmin, admin.ModelAdmin):
    """Emails decisions sent (support replies): queued, sent, failed with the server's answer. A
    failed one is sent again with the action (the same Message-ID), or from its case's page."""

    list_display = ("created_at", "to", "subject", "state", "attempts", "sent_at", "last_error", "case")
    list_filter = ("state", "purpose")
    search_fields = ("to", "subject", "message_id", "case__reference")
    list_select_related = ("case",)
    actions = ["send_again"]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in OutboundEmail._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Send the failed emails again")
    def send_again(self, request, queryset):
        from casework.outbox.email import email_retry

        for email in queryset:
            try:
                email_retry(actor=request.user, email=email)
                self.message_user(request, f"{email.to}: queued again.")
            except DomainError as exc:
                self.message_user(request, f"{email.to}: {exc.message}", level=messages.WARNING)
