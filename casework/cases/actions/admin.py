from __future__ import annotations

from django.contrib import admin

from audit.admin_scope import CaseScopedAdmin
from casework.outbox.models import Action


@admin.register(Action)
class ActionAdmin(CaseScopedAdmin, admin.ModelAdmin):
    """Read-only: an action moves by its delivery, the other system's signed callback, or a
    person's word on the case page (each audited), never by an edit here."""

    list_display = ("id", "label", "case", "state", "requested_at", "deadline_at", "delivered_at", "resolved_at",
                    "resolved_by_name")
    list_filter = ("state", "type")
    search_fields = ("event__id", "case__reference", "external_reference")
    list_select_related = ("case",)

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in Action._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
