from __future__ import annotations

from django.contrib import admin

from audit.models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    """Read-only: entries are written by audit_record alone."""

    list_display = ("id", "timestamp", "actor", "action", "case_ref", "object_type", "object_id")
    list_filter = ("actor_type", "action")
    search_fields = ("actor", "action", "case_ref", "correlation_id", "object_id")
    date_hierarchy = "timestamp"
    readonly_fields = [f.name for f in AuditEntry._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
