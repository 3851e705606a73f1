"""People in the admin: "Deactivate" does what SCIM's deactivation does (sessions ended, API
tokens revoked, open cases back in the queue, one audit entry); the identity provider's links
and groups are shown read-only (the provider owns them)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User

from casework.people.models import ExternalAccount, ScimGroup
from casework.people.services import user_deactivate


class ExternalAccountInline(admin.StackedInline):
    model = ExternalAccount
    can_delete = False
    extra = 0
    readonly_fields = ["source", "oidc_issuer", "oidc_subject", "scim_external_id", "groups", "created_at", "updated_at"]

    def has_add_permission(self, request, obj=None):
        return False


admin.site.unregister(User)


@admin.register(User)
class PersonAdmin(UserAdmin):
    inlines = [*UserAdmin.inlines, ExternalAccountInline]
    actions = ["deactivate"]

    @admin.action(description="Deactivate: end their sessions, revoke their API tokens, return their open cases")
    def deactivate(self, request, queryset):
        if queryset.filter(pk=request.user.pk).exists():
            self.message_user(request, "You cannot deactivate yourself.", messages.ERROR)
            return
        returned = 0
        for user in queryset.filter(is_active=True):
            returned += len(user_deactivate(actor=request.user, user=user, reason="deactivated in the admin")
                            ["cases_returned"])
        self.message_user(request, f"Deactivated; {returned} open case(s) went back to the queue.")


@admin.register(ScimGroup)
class ScimGroupAdmin(admin.ModelAdmin):
    list_display = ["display_name", "external_id", "updated_at"]
    search_fields = ["display_name"]
    readonly_fields = ["display_name", "external_id", "members", "created_at", "updated_at"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
