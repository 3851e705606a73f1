"""Saved queue views: save the queue's filters, list, rename / share / pin, delete, open."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from casework.cases.saved_views import selectors, services
from casework.cases.saved_views.forms import SavedViewForm
from casework.errors import error_text
from casework.people.roles import investigator_required


@require_GET
@investigator_required
def index(request):
    views = selectors.saved_views_visible(request.user)
    forms = {v.pk: SavedViewForm(initial={"name": v.name, "share": SavedViewForm.share_value(v), "pinned": v.pinned},
                                 user=request.user, auto_id=f"view-{v.pk}-%s")
             for v in views if v.owner_id == request.user.pk}
    rows = [(v, forms.get(v.pk)) for v in views]
    return render(request, "saved_views/index.html", {"rows": rows})


@require_POST
@investigator_required
def create(request):
    form = SavedViewForm(request.POST, user=request.user)
    if form.is_valid():
        try:
            view = services.saved_view_create(actor=request.user, name=form.cleaned_data["name"],
                                              query=form.cleaned_data["query"], pinned=form.cleaned_data["pinned"],
                                              **form.sharing())
        except ValidationError as exc:
            messages.error(request, error_text(exc))
        else:
            messages.success(request, f"Saved the view “{view.name}”.")
            return redirect(reverse("saved_views:open", args=[view.pk]))
    else:
        messages.error(request, error_text(form.errors))
    query = request.POST.get("query", "")
    return redirect(reverse("cases:queue") + (f"?{query}" if query else ""))


@require_POST
@investigator_required
def update(request, pk: int):
    view = selectors.saved_view_get_for_user(request.user, pk, own=True)
    form = SavedViewForm(request.POST, user=request.user)
    if form.is_valid():
        try:
            services.saved_view_update(actor=request.user, view=view, name=form.cleaned_data["name"],
                                       pinned=form.cleaned_data["pinned"], **form.sharing())
            messages.success(request, f"Saved “{view.name}”.")
        except ValidationError as exc:
            messages.error(request, error_text(exc))
    else:
        messages.error(request, error_text(form.errors))
    return redirect("saved_views:index")


@require_POST
@investigator_required
def delete(request, pk: int):
    view = selectors.saved_view_get_for_user(request.user, pk, own=True)
    name = view.name
    services.saved_view_delete(actor=request.user, view=view)
    messages.success(request, f"Deleted the view “{name}”.")
    return redirect("saved_views:index")


@require_GET
@investigator_required
def open_view(request, pk: int):
    view = selectors.saved_view_get_for_user(request.user, pk)
    query = f"{view.query}&view={view.pk}" if view.query else f"view={view.pk}"
    return redirect(reverse("cases:queue") + f"?{query}")
