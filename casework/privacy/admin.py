"""Personal data in the admin: each type's retention policy with how many cases are due (the
retention runs' list), legal holds placed and lifted through their services, and the
subject-access export as an action on entities; erasure requests asked, approved (four eyes)
and resumed through their services, with their reports."""

from __future__ import annotations

import base64
import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.template.response import TemplateResponse
from django.utils import timezone

from audit.admin_scope import CaseScopedAdmin
from casework.entities.models import Entity
from casework.people.roles import is_data_protection
from casework.privacy.erasure import erasure_approve, erasure_request, erasure_resume
from casework.privacy.holds import legal_hold_lift, legal_hold_place, may_hold_case, may_hold_entity
from casework.privacy.models import ErasureRequest, LegalHold, RetentionPurge
from casework.privacy.retention import retention_overview
from casework.privacy.subject import REASON_MAX_LENGTH, subject_access_export


class DataProtectionOpens:
    """A data-protection officer is staff without Django model permissions: these admins open
    to the role (as to admins) by role, not by model permission. What a page lists still goes
    through CaseScopedAdmin's need-to-know."""

    officer_may_change = False

    def _officer(self, request) -> bool:
        return is_data_protection(request.user)

    def has_module_permission(self, request):
        return self._officer(request) or super().has_module_permission(request)

    def has_view_permission(self, request, obj=None):
        return self._officer(request) or super().has_view_permission(request, obj)

    def has_change_permission(self, request, obj=None):
        if self.officer_may_change and self._officer(request):
            return True
        return super().has_change_permission(request, obj)


class LegalHoldForm(forms.ModelForm):
    class Meta:
        model = LegalHold
        fields = ["case", "entity", "reason", "until", "lift_reason"]

    def clean(self):
        data = super().clean()
        user = self.request.user
        if self.instance.pk is None:
            case, entity = data.get("case"), data.get("entity")
            if (case is None) == (entity is None):
                raise ValidationError("Hold a case or an entity (one of them).")
            until = data.get("until")
            if until is not None and until <= timezone.now():
                raise ValidationError({"until": "The hold must end in the future (or be left open-ended)."})
            if not (may_hold_case(user, case) if case is not None else may_hold_entity(user)):
                raise ValidationError("Only a lead of a team owning the case's type, an admin or a data-protection "
                                      "officer may place a legal hold.")
        return data


@admin.register(LegalHold)
class LegalHoldAdmin(DataProtectionOpens, CaseScopedAdmin, admin.ModelAdmin):
    officer_may_change = True  # lifting a hold (through its service, with a reason)

    def has_add_permission(self, request):
        return self._officer(request) or super().has_add_permission(request)

    form = LegalHoldForm
    list_display = ("__str__", "reason", "placed_by", "placed_at", "until", "lifted_at")
    list_filter = ("lifted_at",)
    search_fields = ("case__reference", "reason", "entity__display")
    autocomplete_fields = ["case", "entity"]

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        form.request = request
        return form

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["case", "entity", "reason", "until"]
        return ["case", "entity", "reason", "placed_by", "placed_at", "until", "lifted_by", "lifted_at", "lift_reason"]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        fixed = ["case", "entity", "reason", "placed_by", "placed_at", "until", "lifted_by", "lifted_at"]
        return fixed + (["lift_reason"] if obj.lifted_at else [])

    def has_delete_permission(self, request, obj=None):
        return False  # a hold is lifted, on record, never deleted

    def save_model(self, request, obj, form, change):
        # Placing and lifting go through the services (permission, audit entry).
        if not change:
            placed = legal_hold_place(actor=request.user, case=obj.case, entity=obj.entity, reason=obj.reason,
                                      until=obj.until)
            obj.pk = placed.pk
        elif "lift_reason" in form.changed_data and obj.lift_reason.strip():
            legal_hold_lift(actor=request.user, hold=obj, reason=obj.lift_reason)


@admin.register(RetentionPurge)
class RetentionPurgeAdmin(DataProtectionOpens, CaseScopedAdmin, admin.ModelAdmin):
    """Read only: what retention removed, per case; above the list, each type's policy and how
    many cases are due now (and held)."""

    list_display = ("case", "policy", "purged_at", "audit_tombstoned_at")
    list_filter = ("policy",)
    search_fields = ("case__reference",)
    change_list_template = "admin/privacy/retentionpurge/change_list.html"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def changelist_view(self, request, extra_context=None):
        extra = {"policies": retention_overview(now=timezone.now()), **(extra_context or {})}
        return super().changelist_view(request, extra_context=extra)


class SubjectAccessForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), max_length=REASON_MAX_LENGTH,
                             help_text="Why (the subject's request, its date and channel): on record.")


@admin.register(Entity)
class EntityAdmin(DataProtectionOpens, CaseScopedAdmin, admin.ModelAdmin):
    # The only case an entity row points at is the one that confirmed it as fraud.
    case_field = "confirmed_fraud_case"
    list_display = ("__str__", "kind", "display", "created_at")
    list_filter = ("kind",)
    search_fields = ("display", "value")
    readonly_fields = ("kind", "value", "display", "created_at", "confirmed_fraud_at", "confirmed_fraud_case")
    actions = ["subject_access"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Subject access: export everything held about this subject")
    def subject_access(self, request, queryset):
        if not is_data_protection(request.user):
            self.message_user(request, "Only admins and data-protection officers may export a subject's data.",
                              messages.ERROR)
            return None
        if queryset.count() != 1:
            self.message_user(request, "Choose one entity: one subject per request.", messages.ERROR)
            return None
        entity = queryset.get()
        form = SubjectAccessForm(request.POST if "reason" in request.POST else None)
        context = {**self.admin_site.each_context(request), "title": "Subject access", "entity": entity,
                   "form": form, "opts": self.model._meta, "action": "subject_access"}
        if form.is_bound and form.is_valid():
            try:
                export = subject_access_export(actor=request.user, entity=entity, reason=form.cleaned_data["reason"])
            except (PermissionDenied, ValidationError) as error:
                self.message_user(request, str(error), messages.ERROR)
                return None
            # The zip goes to the browser inline, never stored (no second copy of the data).
            context.update(export=export, included=sorted(export.report["included"].items()),
                           download=base64.b64encode(export.content).decode())
        return TemplateResponse(request, "privacy/subject_access.html", context)


class ErasureRequestForm(forms.ModelForm):
    """Asking for an erasure: the subject's entities, chosen by search (the entities admin's
    autocomplete: its need-to-know applies), more subjects as entity ids for bulk, and the reason."""

    entities = forms.ModelMultipleChoiceField(
        queryset=Entity.objects.all(), required=False, label="Subject",
        help_text="The entities naming the subject: type a customer id, account, card, e-mail or employee id. "
                  "The run widens them to those their identifiers name (the e-mail of a customer, the "
                  "accounts they wrote, the cards on an account).")
    subjects_text = forms.CharField(
        label="More subjects", required=False,
        help_text="For a bulk request: entity ids naming each further subject, one subject's separated by commas, "
                  "subjects by semicolons (\"12, 13; 40\"). More than one subject waits for a second person's "
                  "approval.")

    class Meta:
        model = ErasureRequest
        fields = ["reason"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        from django.contrib.admin.widgets import AutocompleteSelectMultiple

        field = self.fields["entities"]
        field.widget = AutocompleteSelectMultiple(ErasureRequest._meta.get_field("entity"), admin.site)
        field.widget.choices = field.choices

    def clean_subjects_text(self):
        text = self.cleaned_data["subjects_text"]
        try:
            subjects = [[int(x) for x in part.split(",") if x.strip()] for part in text.split(";") if part.strip()]
        except ValueError:
            raise ValidationError("Entity ids are numbers: \"12, 13; 40\".") from None
        if not all(subjects):
            raise ValidationError("Name at least one entity per subject.")
        return subjects

    def clean(self):
        data = super().clean()
        if not is_data_protection(self.request.user):
            raise ValidationError("Only admins and data-protection officers may ask for an erasure.")
        first = [entity.pk for entity in data.get("entities") or []]
        subjects = ([first] if first else []) + list(data.get("subjects_text") or [])
        if not subjects and "subjects_text" not in self.errors:
            raise ValidationError({"entities": "Choose the entities naming the subject."})
        data["subjects"] = subjects
        return data


@admin.register(ErasureRequest)
class ErasureRequestAdmin(admin.ModelAdmin):
    """Erasure requests: ask (the add form), approve a bulk one or resume a stopped one (actions),
    and read the report. Admins and data-protection officers only; nothing is edited or deleted."""

    form = ErasureRequestForm
    list_display = ("reference", "status", "four_eyes", "case_count", "requested_by", "requested_at", "approved_by",
                    "finished_at")
    list_filter = ("status", "four_eyes")
    actions = ["approve", "resume"]

    def _allowed(self, request) -> bool:
        return is_data_protection(request.user)

    def has_module_permission(self, request):
        return self._allowed(request)

    def has_view_permission(self, request, obj=None):
        return self._allowed(request)

    def has_add_permission(self, request):
        return self._allowed(request)

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        form.request = request
        return form

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["entities", "subjects_text", "reason"]
        return ["reference", "status", "reason", "subjects", "case_count", "four_eyes", "requested_by",
                "requested_at", "approved_by", "approved_at", "cursor", "batches", "error", "finished_at",
                "report_cases", "report_text"]

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.get_fields(request, obj)

    def get_object(self, request, object_id, from_field=None):
        obj = super().get_object(request, object_id, from_field)
        if obj is not None:
            obj._viewer = request.user  # the report's cases are linked or not by who reads them
        return obj

    @admin.display(description="Cases")
    def report_cases(self, obj):
        """Each case the erasure covered, by its own reference: what happened to it and why. A case
        the reader may open is linked; one outside their teams is named by its reference only (their
        role's need-to-know: casework.privacy.erasure.erasure_cases_addressed), never its content."""
        from django.urls import reverse
        from django.utils.html import format_html, format_html_join

        from casework.cases.visibility import references_visible

        cases = [(ref, what, why) for what, by_ref in (obj.report.get("cases") or {}).items()
                 for ref, why in by_ref.items()]
        if not cases:
            return "-"
        viewer = getattr(obj, "_viewer", None)
        visible = references_visible(viewer, [ref for ref, _, _ in cases]) if viewer is not None else set()

        def named(ref: str):
            if ref in visible:
                return format_html('<a href="{}">{}</a>', reverse("cases:detail", args=[ref]), ref)
            return format_html('{} <span class="help">(outside your teams: reference only)</span>', ref)

        rows = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                                ((named(ref), what, why) for ref, what, why in sorted(cases)))
        return format_html("<table><thead><tr><th>Case</th><th>What happened</th><th>Why</th></tr></thead>"
                           "<tbody>{}</tbody></table>", rows)

    @admin.display(description="Report")
    def report_text(self, obj):
        from django.utils.html import format_html

        rest = {key: value for key, value in obj.report.items() if key != "cases"}
        return format_html("<pre style=\"white-space: pre-wrap\">{}</pre>", json.dumps(rest, indent=2))

    def save_model(self, request, obj, form, change):
        # Asking goes through the service (permission, four eyes, audit entry, the run on commit).
        made = erasure_request(actor=request.user, subjects=form.cleaned_data["subjects"],
                               reason=form.cleaned_data["reason"])
        obj.pk = made.pk

    def _each(self, request, queryset, service, done) -> None:
        """`service` on each chosen request through its own checks, one message each."""
        for item in queryset:
            try:
                service(actor=request.user, request=item)
                self.message_user(request, f"{item.reference} {done(item)}")
            except (PermissionDenied, ValidationError) as error:
                self.message_user(request, f"{item.reference}: {_message(error)}", messages.ERROR)

    @admin.action(description="Approve (a second person): the erasure then runs")
    def approve(self, request, queryset):
        self._each(request, queryset, erasure_approve, lambda item: "approved: it runs in the background.")

    @admin.action(description="Resume (a run that failed or whose worker stopped)")
    def resume(self, request, queryset):
        self._each(request, queryset, erasure_resume, lambda item: f"resumes at case {item.cursor + 1}.")


def _message(error: Exception) -> str:
    return "; ".join(error.messages) if isinstance(error, ValidationError) else str(error)
