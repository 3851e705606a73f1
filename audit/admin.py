from __future__ import annotations

from django.contrib import admin

from audit.admin_scope import CaseScopedAdmin
from audit.models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(CaseScopedAdmin, admin.ModelAdmin):
    """Read-only: entries are written by the audit services alone. An entry about a case is
    listed only to who may see the case (audit.admin_scope)."""

    case_field = "case_id"

    list_display = ("id", "chain_position", "timestamp", "actor", "action", "case_ref", "object_type", "object_id")
    list_filter = ("actor_type", "action")
    search_fields = ("actor", "action", "case_ref", "correlation_id", "object_id")
    date_hierarchy = "timestamp"
    readonly_fields = [f.name for f in AuditEntry._meta.fields]

    @admin.display(description="position", ordering="position")
    def chain_position(self, obj: AuditEntry) -> str:
        # A pending entry is written but not yet linked into the chain by the sequencer.
        return str(obj.position) if obj.sequenced else "pending"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
