"""Need-to-know in the Django admin: every ModelAdmin showing cases or rows of a case lists,
opens and offers only those of the cases the signed-in person may see.

The rule itself lives in the case core (casework.cases.visibility), a layer above this one;
the case core registers it here from its AppConfig.ready (`case_scope_register`), so that the
admins of every layer (the audit trail, the outbox, the case core, the case types, agents) use
one mixin. Without a registered rule the mixin shows no row: it fails closed.

`CaseScopedAdmin.case_field` is the path from the admin's model to the case's id: "pk" for a
case itself, "case" for a row pointing at one, "ticket__case" through another row, "case_id"
for a plain id column (the audit trail). Left unset, it is found by following foreign keys
(at most three steps) to the case model. Rows about no case (a null on the way: an outbox
event of no case, a system audit entry) stay visible.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import Q, QuerySet

CASE_MODEL = "cases.Case"

# user -> a queryset of the ids of the cases they may see, or None for every case.
_rule: list[Callable] = []


def case_scope_register(rule: Callable) -> None:
    _rule[:] = [rule]


def visible_case_ids(user) -> QuerySet | None:
    """The ids of the cases this person may see (a subquery), None for every case; an empty
    list when no rule is registered (fail closed)."""
    if not _rule:
        return []
    return _rule[0](user)


def case_path(model) -> str | None:
    """The shortest path of forward foreign keys from `model` to the case model, e.g.
    "ticket__case"; "pk" for the case model; None when there is none within three steps."""
    if model._meta.label == CASE_MODEL:
        return "pk"
    frontier = [(model, "")]
    for _step in range(3):
        following = []
        for current, path in frontier:
            for field in current._meta.get_fields():
                if not (field.is_relation and field.concrete and (field.many_to_one or field.one_to_one)):
                    continue
                name = f"{path}{field.name}"
                if field.related_model._meta.label == CASE_MODEL:
                    return name
                following.append((field.related_model, f"{name}__"))
        frontier = following
    return None


def _nullable(model, path: str) -> bool:
    """Whether a row may point at no case along `path` (any step of it may be null)."""
    for name in path.split("__"):
        field = model._meta.get_field(name)
        if field.null:
            return True
        model = field.related_model
    return False


class CaseScopedAdmin:
    """Mix in before admin.ModelAdmin (or an inline): the queryset and the choices of case
    foreign keys are those of the cases the person may see (see the module's docstring)."""

    case_field: str | None = None

    def _case_field(self) -> str:
        field = self.case_field or case_path(self.model)
        if field is None:
            raise TypeError(f"{type(self).__name__}: {self.model._meta.label} has no path to a case; set case_field.")
        return field

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        ids = visible_case_ids(request.user)
        if ids is None:
            return queryset
        field = self._case_field()
        scope = Q(**{f"{field}__in": ids})
        if field != "pk" and _nullable(self.model, field):
            scope |= Q(**{f"{field}__isnull": True})
        return queryset.filter(scope)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.related_model._meta.label == CASE_MODEL:
            ids = visible_case_ids(request.user)
            if ids is not None:
                kwargs["queryset"] = db_field.related_model._default_manager.filter(pk__in=ids)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class ReadOnlyRows:
    """Mix in before admin.ModelAdmin (or an inline): its rows are shown, never added, changed or
    deleted in the admin; they move only through their services, which audit them."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
