"""Admin for customers (the VIP flag is set here), knowledge-base articles (edited here) and
tickets (read-only: a ticket changes through its triage and a person's decision).

Saves go through the services, so they are audited and an article's search index is
refreshed."""

from __future__ import annotations

from django.contrib import admin, messages

from audit.admin_scope import CaseScopedAdmin
from casework.errors import DomainError
from casework.support.groups import support_group_save
from casework.support.models import (
    Customer,
    InboundEmail,
    KBArticle,
    SupportGroup,
    Ticket,
    TicketFeedback,
    TicketMessage,
)
from casework.support.services import customer_save, kb_article_save

CUSTOMER_FIELDS = ("customer_id", "name", "email", "plan", "tenure_months", "seats", "region", "vip")


@admin.register(Customer)
class CustomerAdmin(admin.ModelAdmin):
    list_display = ("customer_id", "name", "plan", "seats", "tenure_months", "region", "vip")
    list_filter = ("plan", "vip", "region")
    search_fields = ("customer_id", "name", "email")
    fields = CUSTOMER_FIELDS

    def save_model(self, request, obj, form, change):
        saved = customer_save(actor=request.user, data={f: getattr(obj, f) for f in CUSTOMER_FIELDS})
        obj.pk = saved.pk

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(KBArticle)
class KBArticleAdmin(admin.ModelAdmin):
    list_display = ("article_id", "title", "category", "updated_at")
    list_filter = ("category",)
    search_fields = ("article_id", "title", "body")
    fields = ("article_id", "title", "category", "body")

    def save_model(self, request, obj, form, change):
        saved = kb_article_save(actor=request.user, data={f: getattr(obj, f) for f in
                                                          ("article_id", "title", "category", "body")})
        obj.pk = saved.pk


class TicketMessageInline(admin.TabularInline):
    model = TicketMessage
    fields = ("direction", "text", "text_en", "sent_by", "auto_sent", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Ticket)
class TicketAdmin(CaseScopedAdmin, admin.ModelAdmin):
    list_display = ("ticket_id", "case", "customer", "lifecycle", "urgency", "ticket_type", "recommended_action",
                    "language", "created_at")
    list_filter = ("lifecycle", "urgency", "ticket_type", "recommended_action", "language")
    search_fields = ("ticket_id", "customer__customer_id", "case__reference")
    list_select_related = ("case", "customer")
    inlines = [TicketMessageInline]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in Ticket._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(InboundEmail)
class InboundEmailAdmin(CaseScopedAdmin, admin.ModelAdmin):
    """Every inbound email as received, with what became of it; a held one (unknown sender,
    SUPPORT_UNKNOWN_SENDER=hold) is let in with the action."""

    list_display = ("received_at", "from_email", "subject", "outcome", "ticket", "provider")
    list_filter = ("outcome", "provider")
    search_fields = ("from_email", "subject", "message_id", "ticket__ticket_id")
    list_select_related = ("ticket",)
    actions = ["release"]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in InboundEmail._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Let the held email in (its sender becomes a customer)")
    def release(self, request, queryset):
        from casework.support.inbound import inbound_release

        for inbound in queryset:
            try:
                released = inbound_release(actor=request.user, inbound=inbound)
                self.message_user(request, f"{inbound.from_email}: {released.get_outcome_display()}.")
            except DomainError as exc:
                self.message_user(request, f"{inbound.from_email}: {exc.message}", level=messages.WARNING)


@admin.register(SupportGroup)
class SupportGroupAdmin(admin.ModelAdmin):
    """The four escalation groups (created by migration) and their members, who must be
    investigators to be given tickets. Saved through support_group_save (audited)."""

    list_display = ("key", "name", "member_list", "last_assigned")
    fields = ("key", "name", "members")
    filter_horizontal = ("members",)

    @admin.display(description="Members")
    def member_list(self, obj):
        return ", ".join(obj.members.order_by("username").values_list("username", flat=True)) or "—"

    def get_readonly_fields(self, request, obj=None):
        return ("key",) if obj else ()

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        if db_field.name == "members":
            from django.contrib.auth.models import User

            from casework.support.groups import people_seeing_support

            # Only people who see support tickets (need-to-know): another is refused, named.
            kwargs["queryset"] = User.objects.filter(people_seeing_support()).distinct().order_by("username")
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def save_model(self, request, obj, form, change):
        saved = support_group_save(actor=request.user, key=obj.key, name=obj.name)
        obj.pk = saved.pk

    def save_related(self, request, form, formsets, change):
        support_group_save(actor=request.user, key=form.instance.key, name=form.instance.name,
                           members=list(form.cleaned_data["members"]))

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(TicketFeedback)
class TicketFeedbackAdmin(CaseScopedAdmin, admin.ModelAdmin):
    """The customers' answers to "Did this answer your question?" (read-only)."""

    list_display = ("ticket", "solved", "auto_sent", "category", "article_id", "created_at")
    list_filter = ("solved", "auto_sent", "category")
    search_fields = ("ticket__ticket_id", "article_id")
    list_select_related = ("ticket",)

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in TicketFeedback._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
