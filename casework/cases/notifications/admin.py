from __future__ import annotations

from django.contrib import admin

from audit.admin_scope import CaseScopedAdmin
from casework.cases.notifications.models import Notification, NotificationPreference


@admin.register(Notification)
class NotificationAdmin(CaseScopedAdmin, admin.ModelAdmin):
    """Read-only: notifications are written by notification_send, with their audit entry."""

    list_display = ["created_at", "kind", "recipient_name", "recipient_email", "subject", "read_at", "emailed_at"]
    list_filter = ["kind"]
    search_fields = ["subject", "recipient_name", "recipient_email"]
    list_select_related = ["case"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(NotificationPreference)
class NotificationPreferenceAdmin(admin.ModelAdmin):
    list_display = ["user", *NotificationPreference.GROUPS, "updated_at"]
    list_select_related = ["user"]
