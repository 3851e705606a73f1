"""One filter set for the queue page and the cases API (django-filter).

A bad value (`status=bogus`, an unknown sort, a search past SEARCH_MAX_LENGTH) makes the
filter set invalid: the API answers 400 naming the parameter (DjangoFilterBackend), the
page shows the message and keeps the other filters."""

from __future__ import annotations

import re

import django_filters
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db.models import Q
from django_filters.fields import ModelChoiceField, ModelChoiceIterator

from casework.cases.models import Case
from casework.cases.sla import sla_breached_q, sla_due_soon_q
from casework.cases.types import case_type_choices_available
from casework.cases.visibility import case_type_visible
from casework.people.roles import investigators
from casework.widgets import QuickSelect

SEARCH_MAX_LENGTH = 100
# A pasted full reference (FRA-000123) is looked up on the unique index, not searched for.
FULL_REFERENCE = re.compile(r"^[A-Za-z]{2,6}-\d{4,}$")
# What part of a reference may look like: letters, digits and the dash.
REFERENCE_CHARACTERS = re.compile(r"^[A-Za-z0-9-]+$")


ME = "me"
NOBODY = "none"


def assignee_resolve(value: str | None, *, user: User) -> User | None:
    """An assignee as people and clients write it: `me` (or nothing) is `user`, `none` (or
    null) is nobody, anything else an investigator's username (ValidationError if it is not
    one). The queue's bulk form and the bulk API both read it here."""
    if value is None:
        return None
    value = value.strip()
    if value in ("", ME):
        return user
    if value == NOBODY:
        return None
    found = investigators().filter(username=value).first()
    if found is None:
        raise ValidationError(f"{value} is not an investigator.")
    return found


class _AssigneeIterator(ModelChoiceIterator):
    # "Me" right after "Anyone": the same link (a saved view, "My cases") works for everyone.
    def __iter__(self):
        for index, choice in enumerate(self._choices()):
            yield choice
            if index == 0:
                yield (ME, "Me")

    def _choices(self):
        usernames = getattr(self.field, "usernames", None)
        if usernames is None:
            yield from super().__iter__()
            return
        # The navigation's cached list (the same query, no query per page): a username is
        # both the value (to_field_name) and the label (str(user)).
        yield ("", self.field.empty_label)
        yield (self.field.null_value, self.field.null_label)
        yield from ((name, name) for name in usernames())


class AssigneeField(ModelChoiceField):
    iterator = _AssigneeIterator

    def to_python(self, value):
        return ME if value == ME else super().to_python(value)


class AssigneeFilter(django_filters.ModelChoiceFilter):
    """An investigator's username, `none` (unassigned), or `me`: the person asking."""

    field_class = AssigneeField

    @property
    def field(self):
        field = super().field
        user = getattr(getattr(self.parent, "request", None), "user", None)
        if getattr(user, "is_authenticated", False):
            from casework.cases.navigation import nav_get

            field.usernames = lambda: nav_get(user, "investigators")
        return field

    def filter(self, qs, value):
        if value == ME:
            user = getattr(self.parent.request, "user", None)
            if user is None or not user.is_authenticated:
                return qs.none()
            return qs.filter(assignee=user)
        return super().filter(qs, value)


class CaseOrderingFilter(django_filters.OrderingFilter):
    """Every sort ends with Case.TIEBREAKERS, so that equal keys never move between pages.

    `priority` is the urgent end first (priority_rank ascending: critical, high, medium,
    low) and `-priority` the other way round, whatever the column's values would sort as;
    the labels say which end comes first instead of "ascending/descending"."""

    # The first is what the queue shows when no sort is chosen (the queue's default order).
    LABELS = {
        "-created": "Newest first",
        "created": "Oldest first",
        "priority": "Priority: critical first",
        "-priority": "Priority: low first",
        "updated": "Least recently updated",
        "-updated": "Recently updated",
        "reference": "Reference: A to Z",
        "-reference": "Reference: Z to A",
        "status": "Status: A to Z",
        "-status": "Status: Z to A",
    }

    def build_choices(self, fields, labels):
        return [(key, self.LABELS[key]) for key in self.LABELS if key.lstrip("-") in fields.values()]

    def filter(self, qs, value):
        ordering = [self.get_ordering_value(param) for param in value or []]
        seen = {o.lstrip("-") for o in ordering}
        ordering += [t for t in Case.TIEBREAKERS if t.lstrip("-") not in seen]
        return qs.order_by(*ordering)


class CaseFilter(django_filters.FilterSet):
    q = django_filters.CharFilter(
        method="search", label="Search", max_length=SEARCH_MAX_LENGTH,
        help_text=f"Part of a reference or title (at most {SEARCH_MAX_LENGTH} characters).",
    )
    # Only types whose pipeline exists (callable: read per request, after the pipelines registered).
    # QuickSelect: the same HTML as Django's select templates, at a tenth of the cost (casework/widgets.py).
    case_type = django_filters.ChoiceFilter(choices=case_type_choices_available, label="Type",
                                            empty_label="All types", widget=QuickSelect)
    status = django_filters.ChoiceFilter(choices=Case.Status.choices, empty_label="Any status", widget=QuickSelect)
    priority = django_filters.ChoiceFilter(choices=Case.Priority.choices, empty_label="Any priority",
                                           widget=QuickSelect)
    assignee = AssigneeFilter(
        queryset=investigators, to_field_name="username", empty_label="Anyone", null_label="Unassigned",
        widget=QuickSelect,
        null_value=NOBODY, help_text="An investigator's username, `me` (you) or `none` (unassigned).",
    )
    # Deadlines (casework/cases/sla.py): past due_at and not decided, or due within CASE_SLA_WARN_HOURS.
    sla = django_filters.ChoiceFilter(choices=[("breached", "SLA breached"), ("due_soon", "Due soon")],
                                      method="filter_sla", label="Deadline", empty_label="Any deadline",
                                      widget=QuickSelect)
    # Actions a decision asked of another system, unconfirmed past their deadline (casework/outbox).
    action = django_filters.ChoiceFilter(choices=[("overdue", "Action overdue")], method="filter_action",
                                         label="Actions", empty_label="Any actions", widget=QuickSelect)
    ordering = CaseOrderingFilter(
        fields=(
            ("priority_rank", "priority"),
            ("created_at", "created"),
            ("updated_at", "updated"),
            ("reference", "reference"),
            ("status", "status"),
        ),
        label="Sort",
        widget=QuickSelect,
        # No empty choice: "Newest first" (-created) is the default order and the first option.
        empty_label=None,
    )

    class Meta:
        model = Case
        fields = ["q", "case_type", "status", "priority", "assignee"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        user = getattr(self.request, "user", None)
        if user is not None:
            # Only the types this person sees (need-to-know): another team's type is neither
            # offered nor accepted (400 naming case_type, as any value not offered).
            self.filters["case_type"].extra["choices"] = lambda: [
                (key, label) for key, label in case_type_choices_available() if case_type_visible(user, key)]

    def filter_sla(self, queryset, name, value):
        return queryset.filter(sla_breached_q() if value == "breached" else sla_due_soon_q())

    def filter_action(self, queryset, name, value):
        from casework.cases.actions.services import case_has_overdue_action

        return queryset.filter(case_has_overdue_action())

    def search(self, queryset, name, value):
        value = value.strip()
        if not value:
            return queryset
        if FULL_REFERENCE.match(value):
            # One row from the unique index; an OR with the title search would scan the
            # title's trigram index for a string no title holds.
            return queryset.filter(reference=value.upper())
        if REFERENCE_CHARACTERS.match(value):
            return queryset.filter(Q(reference__icontains=value) | Q(title__icontains=value))
        # Words with a space (or any character no reference has) can only be in a title: one
        # trigram index instead of two OR-ed, about 40% less work for a common phrase.
        return queryset.filter(title__icontains=value)

    def error_messages(self) -> list[str]:
        """One line per bad parameter, naming it, for the page."""
        return [f"{name}: {' '.join(errors)}" for name, errors in self.errors.items()]
