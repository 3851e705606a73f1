"""The rules page: every detection rule with its versions, approvals and measured
performance; forms to write a rule or a new version (investigators), and to approve, reject,
roll back or stop one (managers and admins, never the version's author)."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from casework.errors import DomainError, error_text
from casework.people.roles import investigator_required, is_investigator
from casework.transactions import rules as rule_language
from casework.transactions.monitoring import selectors, services
from casework.transactions.monitoring.models import DetectionRule, RuleVersion


@require_GET
@login_required
def rules(request):
    return render(request, "transactions/rules.html", {
        "rules": selectors.rules_page(request.user), "may_approve": services.may_approve(request.user),
        "may_write": is_investigator(request.user),
        "fields": ", ".join(rule_language.FIELDS), "actions": RuleVersion.Action.choices,
        "modes": RuleVersion.Mode.choices, "user_id": request.user.pk})


def _conditions(request):
    text = request.POST.get("conditions", "")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError({"conditions": [f"Not JSON: {exc.msg} at line {exc.lineno}."]})


def _act(request, do, done: str):
    try:
        do()
        messages.success(request, done)
    except (ValidationError, DomainError, PermissionDenied) as exc:
        messages.error(request, error_text(exc) if not isinstance(exc, PermissionDenied) else str(exc))
    return redirect("transactions:rules")


@require_POST
@investigator_required
def rule_new(request):
    post = request.POST
    return _act(request, lambda: services.rule_create(
        actor=request.user, name=post.get("name", ""), description=post.get("description", ""),
        conditions=_conditions(request), action=post.get("action", ""), mode=post.get("mode", ""),
        note=post.get("note", "")), "Rule proposed: another manager or admin approves it before it runs.")


@require_POST
@investigator_required
def version_propose(request, pk: int):
    rule = get_object_or_404(DetectionRule, pk=pk)
    post = request.POST
    return _act(request, lambda: services.rule_version_propose(
        actor=request.user, rule=rule, conditions=_conditions(request), action=post.get("action", ""),
        mode=post.get("mode", ""), note=post.get("note", "")),
        f"New version of {rule.name} proposed; the active version runs until it is approved.")


VERSION_ACTIONS = {
    "approve": (lambda request, v: services.rule_version_approve(actor=request.user, version=v),
                "{v} approved: it is the active version now."),
    "reject": (lambda request, v: services.rule_version_reject(actor=request.user, version=v,
                                                               reason=request.POST.get("reason", "")),
               "{v} rejected."),
    "activate": (lambda request, v: services.rule_version_activate(actor=request.user, version=v),
                 "{v} is the active version again."),
}


@require_POST
@login_required
def version_act(request, pk: int, number: int, action: str):
    if action not in VERSION_ACTIONS:
        raise Http404(f"No action {action!r}; use {', '.join(VERSION_ACTIONS)}.")
    version = get_object_or_404(RuleVersion.objects.select_related("rule"), rule_id=pk, number=number)
    do, done = VERSION_ACTIONS[action]
    return _act(request, lambda: do(request, version), done.format(v=version))


@require_POST
@login_required
def rule_disable(request, pk: int):
    rule = get_object_or_404(DetectionRule, pk=pk)
    return _act(request, lambda: services.rule_disable(actor=request.user, rule=rule),
                f"{rule.name} stopped: no version runs.")
