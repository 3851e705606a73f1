"""The entity page, the graph pages and their JSON, and linking and merging from a case page."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from casework.cases.selectors import case_get_for_user
from casework.entities import selectors, services
from casework.entities.forms import LinkForm, MergeForm
from casework.errors import DomainError, error_text
from casework.people.roles import investigator_required


def _cursors(request) -> dict:
    """The page asked for: newer than `after` or older than `before` (the page's links)."""
    given = {name: request.GET[name] for name in ("before", "after") if request.GET.get(name)}
    if len(given) > 1:
        raise ValidationError({"after": "Give before or after, not both."})
    return {name: selectors.Cursor.parse(text, field=name) for name, text in given.items()}


@require_GET
@investigator_required
def entity_detail(request, pk: int):
    entity = selectors.entity_get_for_user(request.user, pk)
    try:
        cursors = _cursors(request)
    except ValidationError as exc:
        return render(request, "400.html", {"message": error_text(exc)}, status=400)
    services.entity_viewed(actor=request.user, entity=entity)
    return render(request, "entities/entity.html", {"page": selectors.entity_page(entity, viewer=request.user, **cursors),
                                                    "entity": entity})


@require_GET
@investigator_required
def entity_graph(request, pk: int):
    entity = selectors.entity_get_for_user(request.user, pk)
    services.entity_viewed(actor=request.user, entity=entity, what="graph")
    return render(request, "entities/graph.html", {
        "title": f"{entity.kind_label} {entity.display}", "back": reverse("entities:detail", args=[entity.pk]),
        "data_url": reverse("entities:graph_json", args=[entity.pk])})


@require_GET
@investigator_required
def entity_graph_json(request, pk: int):
    entity = selectors.entity_get_for_user(request.user, pk)
    return JsonResponse(selectors.graph_for_entity(entity, viewer=request.user))


@require_GET
@investigator_required
def case_graph(request, reference: str):
    case = case_get_for_user(request.user, reference)
    return render(request, "entities/graph.html", {
        "title": f"{case.reference} {case.title}", "back": reverse("cases:detail", args=[case.reference]),
        "data_url": reverse("entities:case_graph_json", args=[case.reference])})


@require_GET
@investigator_required
def case_graph_json(request, reference: str):
    case = case_get_for_user(request.user, reference)
    return JsonResponse(selectors.graph_for_case(case, viewer=request.user))


def _other(request, reference: str, field: str):
    try:
        return case_get_for_user(request.user, reference)
    except Http404:
        raise ValidationError({field: f"No case {reference.upper()}."}) from None


def _refused(request, case, what: str, exc: Exception):
    """The refusal, named (field: message), on a page that leads back to the case: 400 for
    bad input, 403 for a role the person lacks, 409 for a state that refuses it."""
    status = 403 if isinstance(exc, PermissionDenied) else getattr(exc, "status_code", 400)
    return render(request, "entities/refused.html", {"case": case, "what": what, "errors": error_text(exc)},
                  status=status)


@require_POST
@investigator_required
def case_link_add(request, reference: str):
    case = case_get_for_user(request.user, reference)
    form = LinkForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError(form.errors)
        other = _other(request, form.cleaned_data["to"], "to")
        services.case_link(actor=request.user, from_case=case, to_case=other, kind=form.cleaned_data["kind"],
                           reason=form.cleaned_data["reason"])
    except (ValidationError, DomainError, PermissionDenied) as exc:
        return _refused(request, case, "linked", exc)
    messages.success(request, f"{case.reference} linked to {other.reference}.")
    return redirect(f"{reverse('cases:detail', args=[case.reference])}#case-links")


@require_POST
@investigator_required
def case_merge(request, reference: str):
    case = case_get_for_user(request.user, reference)
    form = MergeForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError(form.errors)
        survivor = _other(request, form.cleaned_data["into"], "into")
        services.case_merge(actor=request.user, merged=case, survivor=survivor, reason=form.cleaned_data["reason"])
    except (ValidationError, DomainError, PermissionDenied) as exc:
        return _refused(request, case, "merged", exc)
    messages.success(request, f"{case.reference} merged into {survivor.reference}.")
    return redirect("cases:detail", reference=survivor.reference)
