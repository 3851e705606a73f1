"""The pauses, read (each answer goes through the inbox, the case page or the API, which audit
it); the per-tool approval policies, edited here (they override AGENT_APPROVALS)."""

from __future__ import annotations

from django.contrib import admin

from agents.models import ApprovalPolicy, RunPause
from audit.admin_scope import CaseScopedAdmin


@admin.register(RunPause)
class RunPauseAdmin(CaseScopedAdmin, admin.ModelAdmin):
    list_display = ["id", "case", "kind", "status", "tool", "agent", "created_at", "expires_at", "decided_by"]
    list_filter = ["kind", "status", "case_type"]
    search_fields = ["case__reference", "tool", "agent"]
    list_select_related = ["case"]
    readonly_fields = [f.name for f in RunPause._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(ApprovalPolicy)
class ApprovalPolicyAdmin(admin.ModelAdmin):
    list_display = ["tool", "case_type", "mode", "argument", "threshold", "updated_at"]
    list_filter = ["mode", "case_type"]
    search_fields = ["tool"]
