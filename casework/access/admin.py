"""Reference data is edited here. What investigations produce (messages, evidence, answers,
reports) is read-only: it is written by services and audited."""

from __future__ import annotations

from django.contrib import admin

from audit.admin_scope import CaseScopedAdmin, ReadOnlyRows
from casework.access.models import (
    AccessLevel,
    AdvisoryReport,
    AgentMessage,
    DirectAuthorisation,
    Employee,
    EmployeeClaim,
    HRMutation,
    InfoRequest,
    ManagerVerdict,
    RightsCheck,
    Role,
    RoleAuthorisation,
    SickLeave,
    System,
    Vacation,
)


@admin.register(AccessLevel)
class AccessLevelAdmin(admin.ModelAdmin):
    list_display = ["name", "rank"]


@admin.register(System)
class SystemAdmin(admin.ModelAdmin):
    list_display = ["code", "description", "available"]
    list_editable = ["available"]
    search_fields = ["code", "description"]


class RoleAuthorisationInline(admin.TabularInline):
    model = RoleAuthorisation
    extra = 1


@admin.register(Role)
class RoleAdmin(admin.ModelAdmin):
    list_display = ["role_id", "name", "department"]
    search_fields = ["role_id", "name"]
    inlines = [RoleAuthorisationInline]


@admin.register(RoleAuthorisation)
class RoleAuthorisationAdmin(admin.ModelAdmin):
    list_display = ["role", "system", "access_level"]
    list_filter = ["system", "access_level"]


@admin.register(Employee)
class EmployeeAdmin(admin.ModelAdmin):
    list_display = ["employee_id", "name", "department", "job_title", "role", "manager", "user", "status"]
    list_filter = ["department", "status"]
    search_fields = ["employee_id", "name", "email"]
    autocomplete_fields = ["manager", "user"]
    list_select_related = ["role", "manager", "user"]


@admin.register(DirectAuthorisation)
class DirectAuthorisationAdmin(admin.ModelAdmin):
    list_display = ["authorisation_id", "employee", "system", "access_level", "valid_from", "valid_to", "status"]
    list_filter = ["system", "access_level", "status"]
    search_fields = ["authorisation_id", "employee__employee_id", "employee__name"]
    autocomplete_fields = ["employee"]


@admin.register(SickLeave, Vacation)
class AbsenceAdmin(admin.ModelAdmin):
    list_display = ["employee", "start_date", "end_date", "status"]
    # The dates are encrypted at rest: the database would sort their ciphertexts.
    sortable_by = ["employee", "status"]
    list_filter = ["status"]
    search_fields = ["employee__employee_id", "employee__name"]
    autocomplete_fields = ["employee"]


class ReadOnlyAdmin(CaseScopedAdmin, ReadOnlyRows, admin.ModelAdmin):
    pass


@admin.register(HRMutation)
class HRMutationAdmin(CaseScopedAdmin, admin.ModelAdmin):
    """Mutations are created by mutation_submit (page, API, import) so that each gets its case
    and its investigation; here their details can be corrected, never their status."""

    list_display = ["mutation_id", "changed_by", "changed_for", "system", "access_level", "changed_at", "status"]
    list_filter = ["status", "system"]
    search_fields = ["mutation_id", "case__reference", "changed_by__name", "changed_for__name"]
    readonly_fields = ["mutation_id", "case", "status", "created_at", "updated_at"]
    autocomplete_fields = ["changed_by", "changed_for", "manager"]

    def has_add_permission(self, request):
        return False


@admin.register(InfoRequest)
class InfoRequestAdmin(ReadOnlyAdmin):
    list_display = ["mutation", "kind", "recipient", "sent_at", "expires_at", "answered_at", "cancelled_at",
                    "reminder_count", "escalated_at"]
    list_filter = ["kind"]
    exclude = ["nonce"]


@admin.register(AgentMessage)
class AgentMessageAdmin(ReadOnlyAdmin):
    list_display = ["timestamp", "case", "sender", "receiver", "action", "status", "correlation_id"]
    list_filter = ["status", "sender", "receiver", "action"]
    search_fields = ["case__reference", "correlation_id"]


@admin.register(RightsCheck, EmployeeClaim, ManagerVerdict, AdvisoryReport)
class ResultAdmin(ReadOnlyAdmin):
    pass
