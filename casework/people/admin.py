"""People in the admin: "Deactivate" does what SCIM's deactivation does (sessions ended, API
tokens revoked, open cases back in the queue, one audit entry); the identity provider's links
and groups are shown read-only (the provider owns them). Teams, with their memberships inline:
every change through casework.people.teams, audited."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User
from django.db.models import Count

from casework.case_type_source import case_types_known
from casework.people.models import ExternalAccount, ScimGroup, Team, TeamMembership
from casework.people.services import user_deactivate
from casework.people.teams import team_create, team_delete, team_member_remove, team_member_set, team_update


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


class TeamForm(forms.ModelForm):
    """Case types as checkboxes of the registered types; groups one per line."""

    case_types = forms.MultipleChoiceField(choices=lambda: list(case_types_known().items()),
                                           widget=forms.CheckboxSelectMultiple,
                                           help_text="The case types this team's people see and work.")
    sso_groups = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}),
                                 help_text="The identity provider's groups whose members are members (one a line).")
    sso_lead_groups = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}),
                                      help_text="The groups whose members are leads (one a line).")

    class Meta:
        model = Team
        fields = ["name", "slug", "case_types", "sso_groups", "sso_lead_groups"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in ("sso_groups", "sso_lead_groups"):
            self.initial[name] = "\n".join(getattr(self.instance, name) or ())

    def _lines(self, name: str) -> list[str]:
        return [line.strip() for line in self.cleaned_data.get(name, "").splitlines() if line.strip()]

    def clean_sso_groups(self):
        return self._lines("sso_groups")

    def clean_sso_lead_groups(self):
        return self._lines("sso_lead_groups")


class TeamMembershipInline(admin.TabularInline):
    model = TeamMembership
    extra = 1
    fields = ["user", "role", "source"]
    readonly_fields = ["source"]
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    """Every change goes through casework.people.teams (audited): the team itself, and each
    membership added, changed or removed in the inline."""

    form = TeamForm
    inlines = [TeamMembershipInline]
    list_display = ["name", "case_types_shown", "sso_groups_shown", "members"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(member_count=Count("memberships"))

    @admin.display(description="Case types")
    def case_types_shown(self, team):
        return ", ".join(team.case_types or ())

    @admin.display(description="SSO groups (lead groups)")
    def sso_groups_shown(self, team):
        leads = f" ({', '.join(team.sso_lead_groups)})" if team.sso_lead_groups else ""
        return ", ".join(team.sso_groups or ()) + leads

    @admin.display(description="Members", ordering="member_count")
    def members(self, team):
        return team.member_count

    def save_model(self, request, obj, form, change):
        fields = {key: form.cleaned_data[key] for key in ("name", "slug", "case_types", "sso_groups", "sso_lead_groups")}
        if change:
            team_update(actor=request.user, team=Team.objects.get(pk=obj.pk), **fields)
        else:
            team = team_create(actor=request.user, **fields)
            # The inline's memberships and the admin's log entry point at the saved team.
            obj.pk, obj._state.adding = team.pk, False

    def save_formset(self, request, form, formset, change):
        if formset.model is not TeamMembership:
            return super().save_formset(request, form, formset, change)
        team = form.instance
        formset.save(commit=False)
        for membership in formset.deleted_objects:
            team_member_remove(actor=request.user, team=team, user=TeamMembership.objects.get(pk=membership.pk).user)
        for membership, changed in formset.changed_objects:
            before = TeamMembership.objects.get(pk=membership.pk)
            if "user" in changed:
                team_member_remove(actor=request.user, team=team, user=before.user)
                team_member_set(actor=request.user, team=team, user=membership.user, role=membership.role)
            else:
                team_member_set(actor=request.user, team=team, user=membership.user, role=membership.role,
                                source=before.source)
        for membership in formset.new_objects:
            team_member_set(actor=request.user, team=team, user=membership.user, role=membership.role)

    def delete_model(self, request, obj):
        team_delete(actor=request.user, team=obj)

    def delete_queryset(self, request, queryset):
        for team in queryset:
            team_delete(actor=request.user, team=team)


@admin.register(TeamMembership)
class TeamMembershipAdmin(admin.ModelAdmin):
    """Who is in which team, filterable; added and changed on the team's page, removed here or
    there (audited)."""

    list_display = ["user", "team", "role", "source", "created_at"]
    list_filter = ["team", "role", "source"]
    search_fields = ["user__username", "team__name"]
    list_select_related = ["user", "team"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def delete_model(self, request, obj):
        team_member_remove(actor=request.user, team=obj.team, user=obj.user)

    def delete_queryset(self, request, queryset):
        for membership in queryset.select_related("team", "user"):
            team_member_remove(actor=request.user, team=membership.team, user=membership.user)
