from __future__ import annotations

from django.contrib import admin, messages

from casework.security.models import ApiToken
from casework.security.tokens import api_token_create, api_token_revoke


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Each token's owner, expiry and last use; revoke in bulk. A token made here shows its
    secret once, in the message after saving."""

    list_display = ["prefix", "user", "name", "created_at", "expires_at", "last_used_at", "revoked_at", "active"]
    list_filter = ["revoked_at"]
    search_fields = ["prefix", "user__username", "name"]
    readonly_fields = ["prefix", "created_at", "last_used_at", "revoked_at"]
    fields = ["user", "name", "expires_at", *readonly_fields]
    actions = ["revoke"]

    @admin.display(boolean=True)
    def active(self, token: ApiToken) -> bool:
        return token.is_active

    def has_change_permission(self, request, obj=None):
        return False  # a token is made or revoked, never edited

    def save_model(self, request, obj, form, change):
        token, secret = api_token_create(actor=request.user, user=obj.user, name=obj.name, days=0)
        if obj.expires_at:
            token.expires_at = obj.expires_at
            token.save(update_fields=["expires_at"])
        obj.pk, obj.prefix, obj.digest = token.pk, token.prefix, token.digest
        messages.warning(request, f"The new token is {secret} . Copy it now: it is not stored and is not shown again.")

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset):
        for token in queryset.select_related("user"):
            api_token_revoke(actor=request.user, token=token)
        self.message_user(request, f"{queryset.count()} token(s) revoked.")


# DRF's own token table is empty after security 0002 and its keys would be stored in clear.
try:
    from rest_framework.authtoken.models import TokenProxy

    admin.site.unregister(TokenProxy)
except (ImportError, admin.sites.NotRegistered):
    pass
