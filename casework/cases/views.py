"""Queue and case pages. An htmx request gets the fragment it swaps, a plain one the page."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpResponse, HttpResponseBadRequest, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from audit.access import access_not_recorded
from casework.cases import selectors, services
from casework.cases.filters import SEARCH_MAX_LENGTH, CaseFilter
from casework.cases.forms import CloseForm, CommentForm
from casework.cases.merges import case_merged_into
from casework.cases.models import Case
from casework.cases.pagination import CappedPaginator, count_cap_for
from casework.cases.signals import case_viewed
from casework.cases.timeline import show_parse, timeline_context, timeline_has_news
from casework.errors import DomainError, error_text
from casework.people.roles import investigator_required

QUEUE_PAGE_SIZE = 25


@require_GET
@investigator_required
def queue(request):
    filterset = CaseFilter(request.GET or None, queryset=selectors.case_list(request.user), request=request)
    cap = count_cap_for(request.GET)
    page = CappedPaginator(filterset.qs, QUEUE_PAGE_SIZE, cap=cap).get_page(request.GET.get("page"))
    params = request.GET.copy()
    params.pop("page", None)
    # A bad parameter is named on the page (and answered 400); the valid ones still filter.
    errors = filterset.error_messages() if filterset.is_bound else []
    context = {"filter": filterset, "page": page, "params": params.urlencode(), "filter_errors": errors,
               "count_cap": cap, "search_max_length": SEARCH_MAX_LENGTH}
    if request.htmx and request.htmx.target == "queue-results":
        # 200 even with a message: htmx swaps no 4xx response, and the message must show.
        return render(request, "cases/_queue_results.html", context)
    return render(request, "cases/queue.html", context, status=400 if errors else 200)


@require_POST
@investigator_required
def assign_to_me(request, reference: str):
    case = selectors.case_get_for_user(request.user, reference)
    try:
        case = services.case_assign(actor=request.user, case=case, assignee=request.user)
    except DomainError as exc:
        messages.error(request, exc.message)
    if request.htmx:
        case = selectors.case_list(request.user).get(pk=case.pk)
        return render(request, "cases/_queue_row.html", {"case": case})
    return redirect("cases:detail", reference=case.reference)


def _entry_id(request, name: str) -> int | None:
    """A timeline cursor (?before=, ?after=): an audit entry id, or absent."""
    value = request.GET.get(name)
    if value in (None, ""):
        return None
    if not value.isdigit() or len(value) > 18:
        raise ValidationError({name: f"{name} is an entry number (digits only)."})
    return int(value)


def _detail_context(request, case, **extra):
    return {
        "case": case,
        "decision": selectors.case_final_decision(case),
        "comments": selectors.case_comments(case),
        **timeline_context(case, request.GET.get("timeline"), before=_entry_id(request, "before")),
        "comment_form": CommentForm(),
        "close_form": CloseForm(case=case),
        "tabs": case.type_info.tabs,
        **extra,
    }


@require_GET
@investigator_required
def detail(request, reference: str):
    case = selectors.case_get_for_user(request.user, reference)
    merge = case_merged_into(case)
    if merge is not None:
        # A merged duplicate lives on in the case that took it: say so, and go there.
        messages.info(request, f"{case.reference} was merged into {merge.survivor.reference} by "
                               f"{merge.merged_by.get_username()} on {merge.merged_at:%Y-%m-%d %H:%M} UTC: "
                               f"{merge.reason}")
        return redirect(f"{reverse('cases:detail', args=[merge.survivor.reference])}?from={case.reference}")
    try:
        context = _detail_context(request, case)
    except ValidationError as exc:
        return HttpResponseBadRequest(error_text(exc))
    # Opening the case is acting on it: its notifications to this person are read.
    case_viewed.send(sender=Case, case=case, user=request.user)
    return render(request, "cases/detail.html", context)


@require_GET
@investigator_required
@access_not_recorded  # part of the case page, whose opening is the read; and its poll
def timeline(request, reference: str):
    case = selectors.case_get_for_user(request.user, reference)
    try:
        before, after = _entry_id(request, "before"), _entry_id(request, "after")
    except ValidationError as exc:
        return HttpResponseBadRequest(error_text(exc))
    show = show_parse(request.GET.get("timeline"))
    if after is not None and not timeline_has_news(case, show=show, after=after):
        # The poll, and nothing newer than what it shows: htmx swaps nothing on a 204.
        return HttpResponse(status=204)
    context = timeline_context(case, show, before=before)
    if before is not None:
        # "Older entries": the next page's rows, in the link's place.
        return render(request, "cases/_timeline_rows.html", {**context, "case": case})
    # The header's status, priority and assignee ride along (out of band): they update live.
    response = render(request, "cases/_timeline.html", {**context, "case": case, "live_case": case})
    if request.htmx and request.htmx.current_url:
        # A filter link: the page's own address keeps the choice (reload, back, a shared link),
        # with whatever else its query holds.
        page = urlsplit(request.htmx.current_url)
        query = QueryDict(page.query, mutable=True)
        if query.get("timeline", "all") != context["timeline_show"]:
            query["timeline"] = context["timeline_show"]
            response["HX-Replace-Url"] = urlunsplit(("", "", page.path, query.urlencode(), page.fragment))
    return response


@require_POST
@investigator_required
def comment_add(request, reference: str):
    case = selectors.case_get_for_user(request.user, reference)
    form = CommentForm(request.POST)
    if form.is_valid():
        try:
            services.case_comment(actor=request.user, case=case, body=form.cleaned_data["body"])
            form = CommentForm()
        except ValidationError as exc:
            form.add_error(None, exc)
    if request.htmx:
        return render(request, "cases/_comments.html",
                      {"case": case, "comments": selectors.case_comments(case), "comment_form": form})
    if form.errors:
        messages.error(request, error_text(form.errors, named=False))
    return redirect("cases:detail", reference=case.reference)


@require_POST
@investigator_required
def close(request, reference: str):
    case = selectors.case_get_for_user(request.user, reference)
    form = CloseForm(request.POST, case=case)
    if form.is_valid():
        try:
            services.case_close(actor=request.user, case=case, **form.cleaned_data)
            messages.success(request, f"{case.reference} closed.")
            return redirect("cases:detail", reference=case.reference)
        except DomainError as exc:
            messages.error(request, exc.message)
            return redirect("cases:detail", reference=case.reference)
        except ValidationError as exc:
            form.add_error(None, exc)
    case.refresh_from_db()
    return render(request, "cases/detail.html", _detail_context(request, case, close_form=form), status=400)
