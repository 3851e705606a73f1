from __future__ import annotations

from django.contrib import admin

from audit.admin_scope import CaseScopedAdmin
from casework.cases.tasks.models import Task


@admin.register(Task)
class TaskAdmin(CaseScopedAdmin, admin.ModelAdmin):
    """Read-only: tasks change through their services, each change audited (the case page, the API)."""

    list_display = ("case", "position", "title", "assignee", "due_on", "done", "done_by", "done_at")
    list_filter = ("done",)
    search_fields = ("case__reference", "title")
    list_select_related = ("case", "assignee", "done_by")
    readonly_fields = [f.name for f in Task._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
