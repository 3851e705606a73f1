from __future__ import annotations

from django.contrib import admin

from audit.admin_scope import CaseScopedAdmin
from casework.cases.models import Case, CaseCounter, Comment, Decision


class CommentInline(admin.TabularInline):
    model = Comment
    extra = 0
    autocomplete_fields = ["author"]
    readonly_fields = ["created_at"]


class DecisionInline(admin.TabularInline):
    model = Decision
    extra = 0
    autocomplete_fields = ["decided_by"]
    readonly_fields = ["decided_at"]


@admin.register(Case)
class CaseAdmin(CaseScopedAdmin, admin.ModelAdmin):
    list_display = ("reference", "case_type", "title", "status", "priority", "assignee", "created_at", "updated_at")
    list_filter = ("case_type", "status", "priority")
    search_fields = ("reference", "title")
    autocomplete_fields = ["assignee", "created_by"]
    readonly_fields = ["reference", "created_at", "updated_at", "closed_at"]
    date_hierarchy = "created_at"
    inlines = [DecisionInline, CommentInline]

    def save_model(self, request, obj, form, change):
        # New cases get their reference and audit entry from the service.
        if change:
            super().save_model(request, obj, form, change)
            from audit.services import audit_record

            audit_record(actor=request.user, action="case.edited_in_admin", case=obj, obj=obj,
                         data={"changed": form.changed_data})
            return
        from casework.cases.services import case_create

        created = case_create(actor=request.user, case_type=obj.case_type, title=obj.title,
                              description=obj.description, priority=obj.priority, assignee=obj.assignee)
        obj.pk = created.pk
        obj.reference = created.reference


@admin.register(Decision)
class DecisionAdmin(CaseScopedAdmin, admin.ModelAdmin):
    list_display = ("case", "outcome", "decided_by", "decided_at", "final")
    list_filter = ("outcome", "final")
    search_fields = ("case__reference", "reason")
    autocomplete_fields = ["case", "decided_by"]


@admin.register(Comment)
class CommentAdmin(CaseScopedAdmin, admin.ModelAdmin):
    list_display = ("case", "author", "created_at")
    search_fields = ("case__reference", "body")
    autocomplete_fields = ["case", "author"]


@admin.register(CaseCounter)
class CaseCounterAdmin(admin.ModelAdmin):
    list_display = ("case_type", "last")
