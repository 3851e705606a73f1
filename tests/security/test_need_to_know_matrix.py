"""Need-to-know, generated: every URL reachable from casework/urls.py and every operation of the
OpenAPI schema, tried as a member of each team, a lead, a person in no team, a manager and an
admin, over one case of each type and a restricted case (tests/security/need_to_know_world.py).

Each URL name has a row in TABLE (admin URLs: a rule by the shape of their name), so a new URL
without one fails `test_every_url_and_operation_is_placed`:

    case (or case:<type>)  the URL names a case (reference, a support ticket's ticket_id, a
        release's release_id): for a case the person may not see, each method tried (GET; POST
        when GET is 405; every other method the schema lists) answers exactly as for a case
        that does not exist, never 2xx, and a refused POST changes nothing (no audit entry, the
        case's row as it was). The hidden case is one the person may not see, the restricted
        one first; a person of the owning team also reads the page of a case they see, which
        must name no case hidden from them (similar cases, links ...).
    list  a page or list operation: as every person, it names no case they may not see.
    skip  not about cases (sign-in, signed links, detection rules, a person's own rows ...): why.

Django admin, as `staff` (not a superuser, every view permission, the support team): every
list and add page names no case hidden from them, and the change, history and delete pages of
a row of a hidden case answer as for a row that does not exist. Every ModelAdmin of a model
with a path to a case is a CaseScopedAdmin (audit.admin_scope) unless ADMIN_NOT_SCOPED says why.

KNOWN_ELSEWHERE lists leaks in other branches' areas: each entry must still leak (remove it
when its branch merges), and a leak not listed fails."""

from __future__ import annotations

import functools
import re

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve

from tests.security.need_to_know_world import World, world_make

pytestmark = pytest.mark.django_db

SIGN_IN = "sign-in and identity-provider endpoints, no case"
SIGNED = "a signed link or a signature, no session: no person's need-to-know applies"
OWN = "a person's own rows (their notifications, saved views): tests of their areas"
RULES = "detection rules are the organisation's, no case (the page names a case only to who sees it)"
EVALS = "evaluation runs and stored scenarios: admins only, no live case"
CREATE = "creates a case or takes references in its body, no case in the URL"
ADDRESSED = "a manager's validation request, shown only to the manager it is addressed to (tests/access)"
WEBHOOKS = "webhook endpoints and deliveries: admins only"
LISTS = "allow and deny lists are the organisation's values (devices, IPs ...), no case"

TABLE: dict[str, str] = {
    "home": "list", "login": "skip " + SIGN_IN, "logout": "skip " + SIGN_IN,
    "oidc_authentication_init": "skip " + SIGN_IN, "oidc_authentication_callback": "skip " + SIGN_IN,
    "people:no_role": "list",
    "cases:queue": "list", "cases:bulk": "skip " + CREATE, "cases:detail": "case", "cases:timeline": "case",
    "cases:assign_to_me": "case", "cases:comment_add": "case", "cases:close": "case",
    "notifications:inbox": "list", "notifications:read_all": "skip " + OWN, "notifications:preferences": "list",
    "notifications:open": "skip " + OWN,
    "saved_views:index": "list", "saved_views:create": "skip " + OWN, "saved_views:open": "skip " + OWN,
    "saved_views:update": "skip " + OWN, "saved_views:delete": "skip " + OWN,
    "lifecycles:index": "list",
    "fraud:index": "list", "fraud:import": "list", "fraud:alert_enter": "list", "fraud:import_template": "list",
    "fraud:patterns": "list", "fraud:assessment": "case:fraud", "fraud:reassess": "case:fraud",
    "fraud:rerun": "case:fraud", "fraud:capture_retry": "case:fraud",
    "access:respond": "skip " + SIGNED, "access:inbox": "list", "access:inbox_detail": "skip " + ADDRESSED,
    "access:mutation_new": "list", "access:case_tab": "case:access", "access:decide": "case:access",
    "access:resend": "case:access",
    "support:queue": "list", "support:message_new": "list", "support:auto_sent": "list",
    "support:kb_article": "skip the knowledge base's articles, no case", "support:triage": "case:support",
    "support:reply": "case:support", "support:inbound_email": "skip " + SIGNED, "support:resend": "case:support",
    "support:escalate": "case:support", "support:close": "case:support", "support:pending": "case:support",
    "support:escalate_group": "case:support", "support:feedback": "skip " + SIGNED,
    "transactions:index": "list", "transactions:rules": "list", "transactions:rule_new": "skip " + RULES,
    "transactions:rule_version_propose": "skip " + RULES, "transactions:rule_version_act": "skip " + RULES,
    "transactions:rule_disable": "skip " + RULES, "transactions:progress": "case:txn",
    "transactions:resume": "case:txn", "transactions:recommendation": "case:txn", "transactions:rule_edit": "case:txn",
    "transactions:rule_promote": "case:txn",
    "releases:index": "list", "releases:overview": "case:release", "releases:decide": "case:release",
    "releases:reassess": "case:release",
    "chat:panel": "case", "chat:send": "case", "chat:new": "case", "chat:message": "case", "chat:trace": "case",
    "agents:run_panel": "case", "agents:run_trace": "case", "agents:rerun": "case",
    "case_tasks:panel": "case", "case_tasks:add": "case", "case_tasks:from_template": "case", "case_tasks:done": "case",
    "case_tasks:reopen": "case", "case_tasks:assign": "case",
    "case_attachments:panel": "case", "case_attachments:upload": "case", "case_attachments:download": "case",
    "case_report:download": "case", "case_actions:case_actions": "case", "case_actions:action_resolve": "case",
    "entities:detail": "list", "entities:graph": "list", "entities:graph_json": "list",
    "entities:case_graph": "case", "entities:case_graph_json": "case", "entities:link": "case", "entities:merge": "case",
    "evals:index": "list", "evals:run": "skip " + EVALS, "evals:scenario_trace": "skip " + EVALS,
    "evals:scenario_diff": "skip " + EVALS, "evals:add": "case", "evals:stored": "list",
    "evals:stored_review": "skip " + EVALS,
    "api-case-list": "list", "api-case-bulk": "skip " + CREATE, "api-case-detail": "case", "api-case-assign": "case",
    "api-case-comment": "case", "api-case-close": "case",
    "api-fraud-alert-create": "skip " + CREATE, "api-fraud-alert-detail": "case:fraud",
    "api-fraud-alert-reassess": "case:fraud", "api-fraud-alert-rerun": "case:fraud",
    "api-fraud-alert-capture-retry": "case:fraud", "api-fraud-alert-close": "case:fraud",
    "api-access-mutation-submit": "skip " + CREATE, "api-access-mutation-detail": "case:access",
    "api-access-employee-answer": "skip " + SIGNED, "api-access-inbox": "list",
    "api-access-manager-answer": "skip " + ADDRESSED,
    "api-support-message": "skip " + CREATE, "api-support-intake": "skip an intake run, checked in tests/support",
    "api-support-ticket": "case:support", "api-support-reply": "case:support", "api-support-escalate": "case:support",
    "api-support-close": "case:support",
    "api-txn-rules": "list", "api-txn-rule-versions": "skip " + RULES, "api-txn-rule-version-act": "skip " + RULES,
    "api-txn-rates": "list", "api-txn-import": "skip " + CREATE, "api-txn-start": "skip " + CREATE,
    "api-txn-detail": "case:txn", "api-txn-resume": "case:txn", "api-txn-recommendation": "case:txn",
    "api-txn-rule-promote": "case:txn",
    "api-txn-decide": "skip " + CREATE,
    "api-txn-decision": "skip a decision's id, not a case: the answer to a decide call, read by the teams that "
    "work transaction investigations, 404 for anyone else (tests/transactions/test_decisions.py)", "api-txn-lists": "list", "api-txn-list-entries": "skip " + LISTS,
    "api-txn-list-entry-remove": "skip " + LISTS,
    "api-release-submit": "skip " + CREATE, "api-release-detail": "case:release", "api-release-decide": "case:release",
    "api-conversation": "case", "api-conversation-ask": "case", "api-conversation-new": "case",
    "api-case-tasks": "case", "api-case-tasks-from-template": "case", "api-case-task-done": "case",
    "api-case-task-reopen": "case", "api-case-task-assign": "case", "api-case-attachments": "case",
    "api-case-attachment-download": "case", "api-case-report": "case",
    "api-saved-view-list": "list", "api-saved-view-detail": "skip " + OWN,
    "api-webhook-endpoint-list": "list", "api-webhook-endpoint-detail": "skip " + WEBHOOKS,
    "api-webhook-endpoint-rotate": "skip " + WEBHOOKS, "api-webhook-endpoint-deliveries": "skip " + WEBHOOKS,
    "api-webhook-endpoint-replay-failed": "skip " + WEBHOOKS, "api-webhook-delivery-replay": "skip " + WEBHOOKS,
    "api-action-confirmation": "skip " + SIGNED,
    "api-entity-detail": "list", "api-case-related": "case", "api-case-link": "case", "api-case-merge": "case",
    "api-legal-hold-place": "skip " + CREATE, "api-legal-hold-lift": "skip a hold's id, not a case: a hold on a case "
    "or entity the person may not see answers 404 (tests/privacy/test_holds.py)",
    "api-entity-subject-access": "list",
    "api-erasure-request": "skip data-protection officers and admins only, every team's (their role is their "
    "need-to-know); anyone else meets a 403 (tests/privacy/test_erasure.py)",
    "api-erasure-request-detail": "skip an erasure request's id, not a case: 404 but for data-protection officers "
    "and admins (tests/privacy/test_erasure.py)",
    "api-erasure-request-approve": "skip as api-erasure-request-detail",
    "api-erasure-request-resume": "skip as api-erasure-request-detail",
    "schema": "skip the API's description: its examples name made-up references (FRA-000002 ...)",
    "swagger-ui": "list", "audit:key": "list",
    "scim:users": "skip " + SIGNED, "scim:user": "skip " + SIGNED, "scim:groups": "skip " + SIGNED,
    "scim:group": "skip " + SIGNED, "scim:service_provider_config": "skip " + SIGNED,
    "healthz": "list", "metrics": "list",
    "cases:export_csv": "list", "cases:restriction": "case", "api-case-restriction": "case",
    "budgets:case_budget": "case", "api-case-budget": "case", "api-case-budget-stop": "case",
    "access_log:who_looked": "case", "access_log:export": "list", "teams:list": "list",
    "teams:person_access": "skip a person's own access page, or an admin's: tests/cases/test_teams_pages.py",
    "approvals:inbox": "list", "approvals:panel": "case", "approvals:decide": "case", "api-approvals": "list",
    "api-approval-approve": "skip an approval's id, not a case: one of a case the person may not see answers 404 "
    "as for none (tests/access/test_approvals_api.py)",
    "api-approval-deny": "skip an approval's id, not a case: one of a case the person may not see answers 404 "
    "as for none (tests/access/test_approvals_api.py)",
}

# Admin URL names by shape: (pattern, kind).
ADMIN_RULES = [
    (r"admin:\w+_changelist|admin:\w+_add|admin:index", "admin-list"),
    (r"admin:\w+_(change|history|delete)", "admin-object"),
    (r"admin:(login|logout|password_change|password_change_done|jsi18n|app_list|autocomplete|view_on_site"
     r"|auth_user_password)", "skip the admin's own pages (its list pages are tried)"),
]

# Models with a path to a case whose admin is not need-to-know scoped, and why.
ADMIN_NOT_SCOPED = {
    "privacy.ErasureRequest": "data-protection officers' and admins' only, every team's (their role is their "
    "need-to-know); its path to a case is its entity's confirmed-fraud case, which it does not show",
    "transactions.DetectionRule": "a detection rule is the organisation's; the case it was drafted on is not shown",
}

# Leaks found in other branches' areas: name -> the area that fixes them.
KNOWN_ELSEWHERE: dict[str, str] = {}

APPLIES = {"case": ["restricted", "fraud", "support", "access", "txn", "release"], "case:fraud": ["restricted", "fraud"],
           "case:support": ["support"], "case:access": ["access"], "case:txn": ["txn"], "case:release": ["release"]}
# Who reads a case page of their own team's case (the side-door check), per kind.
OWNER = {"case": ("fraud_member", "fraud"), "case:fraud": ("fraud_member", "fraud"),
         "case:support": ("support_member", "support"), "case:access": ("iam_member", "access"),
         "case:txn": ("fraud_member", "txn"), "case:release": ("releases_member", "release")}
MISSING = {"reference": "{prefix}-999999", "ticket_id": "TKT-NOSUCH00", "release_id": "rel-no-such"}


def url_names() -> dict[str, str]:
    """view name -> route, for every named URL (admin's too)."""
    found: dict[str, str] = {}

    def walk(patterns, prefix: str, namespace: str | None):
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + str(p.pattern), ":".join(filter(None, [namespace, p.namespace])) or None)
            elif isinstance(p, URLPattern) and p.name:
                found.setdefault(f"{namespace}:{p.name}" if namespace else p.name, prefix + str(p.pattern))

    walk(get_resolver().url_patterns, "/", None)
    return found


def kind_of(name: str) -> str | None:
    if name in TABLE:
        return TABLE[name]
    for pattern, kind in ADMIN_RULES:
        if re.fullmatch(pattern, name):
            return kind
    return None


@functools.cache  # the schema depends on the code only; generating it costs ~0.5 s (issue 44)
def schema_operations() -> dict[str, set[str]]:
    """view name -> the methods the OpenAPI schema lists for it (read only: cached)."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    operations: dict[str, set[str]] = {}
    for path, item in schema["paths"].items():
        name = resolve(re.sub(r"\{[^}]+\}", "1", path)).view_name
        operations.setdefault(name, set()).update(m.upper() for m in item if m in ("get", "post", "put", "patch", "delete"))
    return operations


def test_every_url_and_operation_is_placed():
    unplaced = sorted(name for name in url_names() if kind_of(name) is None)
    unplaced += sorted(f"{name} (schema)" for name in schema_operations() if kind_of(name) is None)
    assert not unplaced, f"URLs the need-to-know matrix cannot place (add a row to TABLE): {unplaced}"
    stale = sorted(set(TABLE) - set(url_names()))
    assert not stale, f"TABLE rows for URLs that no longer exist: {stale}"


# --- the requests -------------------------------------------------------------------------

def body(response) -> str:
    data = b"".join(response.streaming_content) if response.streaming else response.content
    return data.decode("utf-8", "replace") + " " + response.get("Location", "")


def fill(route: str, values: dict[str, str], name: str) -> str:
    pk = {"access:resend": values.get("request_pk"), "approvals:decide": values.get("approval_pk")}.get(name) or (values.get("task_pk") if "task" in name else None)
    extra = {"pk": pk or "999999", "run_id": values.get("run_id", "999999"), "message_id": "999999", "trace_id": "0" * 32,
             "tab": "answers"}
    url = route
    for key, value in {**values, **extra}.items():
        url = re.sub(rf"<(?:str|int|slug|path):{key}>", value, url)
    assert "<" not in url, url
    return url


def missing_values(values: dict[str, str]) -> dict[str, str]:
    prefix = values["reference"].split("-")[0]
    return {**values, **{k: MISSING[k].format(prefix=prefix) for k in MISSING if k in values}}


def snapshot(case) -> tuple:
    from audit.models import AuditEntry
    from casework.cases.models import Case

    row = Case.objects.filter(pk=case.pk).values().get()
    return AuditEntry.objects.filter(case_id=case.pk).count(), row


def send(client: Client, method: str, url: str, api: bool):
    if method == "GET":
        return client.get(url)
    if api:
        return getattr(client, method.lower())(url, {}, content_type="application/json")
    return client.post(url, {})


@pytest.fixture
def world(asked) -> World:
    return world_make(asked)


@pytest.fixture
def clients(world):
    made = {}
    for name, user in {**world.people, "staff": world.staff}.items():
        made[name] = Client()
        made[name].force_login(user)
    return made


@pytest.mark.long(seconds=60)
def test_no_page_or_operation_shows_a_case_outside_need_to_know(world, clients):
    operations = schema_operations()
    leaks: dict[str, list[str]] = {}
    figures = {"requests": 0, "owner_pages_200": 0, "owner_pages_other": []}

    def leak(name: str, text: str):
        leaks.setdefault(name, []).append(text)

    for index, (name, route) in enumerate(sorted(url_names().items())):
        kind = kind_of(name)
        if kind == "list":
            values = _list_values(world, name)
            if values is None:
                continue
            url = fill(route, values, name)
            for person, client in clients.items():
                user = world.staff if person == "staff" else world.people[person]
                response = client.get(url)
                figures["requests"] += 1
                if found := world.leaked(body(response), user):
                    leak(name, f"GET {url} as {person} ({response.status_code}) names {found}")
        elif kind.startswith("case"):
            _case_url(world, clients, name, route, kind, index, operations.get(name, set()), leak, figures)
    _admin(world, clients["staff"], leak, figures)

    unexpected = {name: found for name, found in leaks.items() if name not in KNOWN_ELSEWHERE}
    fixed = sorted(name for name in KNOWN_ELSEWHERE if name not in leaks)
    print(f"need-to-know matrix: {figures['requests']} requests; owner pages 200: {figures['owner_pages_200']}, "
          f"other: {figures['owner_pages_other']}")
    assert not unexpected, "Need-to-know leaks (URL name: the first of N):\n" + "\n".join(
        f"{name}: {found[0]} (of {len(found)})" for name, found in sorted(unexpected.items()))
    assert not fixed, f"KNOWN_ELSEWHERE entries that no longer leak (remove them): {fixed}"


def _list_values(world: World, name: str) -> dict[str, str] | None:
    """URL values for a list page: an entity's pages are tried on an entity the restricted case
    names (the most-named one), so that they list a case most people may not see."""
    if not name.startswith(("entities:", "api-entity")):
        return {}
    from django.db.models import Count

    from casework.entities.models import Entity

    entity = (Entity.objects.filter(mentions__case=world.cases["restricted"])
              .annotate(named=Count("mentions")).order_by("-named", "pk").first())
    return {"pk": str(entity.pk)} if entity else None


def _case_url(world, clients, name, route, kind, index, schema_methods, leak, figures):
    from casework.people.roles import is_investigator

    api = name.startswith("api-")
    missing_answers: dict[tuple, int] = {}
    owner, own_key = OWNER[kind]
    own_url = fill(route, world.ids[own_key], name)
    response = clients[owner].get(own_url)
    figures["requests"] += 1
    if response.status_code == 200:
        figures["owner_pages_200"] += 1
        if found := world.leaked(body(response), world.people[owner]):
            leak(name, f"GET {own_url} as {owner}, on their own team's case, names {found}")
    elif response.status_code != 405:
        figures["owner_pages_other"].append(f"{name} {response.status_code}")
    for person, client in clients.items():
        if person == "staff":
            continue
        user = world.people[person]
        hidden = [key for key in APPLIES[kind] if key in world.hidden_from(user)]
        if not hidden:
            continue
        key = hidden[index % len(hidden)]
        values = world.ids[key]
        url, missing = fill(route, values, name), fill(route, missing_values(values), name)
        methods = ["GET", *sorted(m for m in schema_methods if m != "GET")]
        for method in methods:
            before = snapshot(world.cases[key])
            got = send(client, method, url, api)
            # A missing case's answer depends on the caller's role only (works cases or not).
            asked = (method, is_investigator(user), user.groups.first().name)
            if asked not in missing_answers:
                missing_answers[asked] = send(client, method, missing, api).status_code
                figures["requests"] += 1
            expected = missing_answers[asked]
            figures["requests"] += 1
            if got.status_code == 405 and method == "GET" and "POST" not in methods:
                methods.append("POST")
                continue
            if got.status_code != expected or 200 <= got.status_code < 300:
                leak(name, f"{method} {url} as {person}: {got.status_code}, a missing case {expected}")
            if method != "GET" and snapshot(world.cases[key]) != before:
                leak(name, f"{method} {url} as {person} changed the hidden case")


def _admin(world, client, leak, figures):
    """The Django admin as `staff`: lists and add forms, then each scoped model's row of a case
    hidden from them."""
    from audit.admin_scope import CaseScopedAdmin, case_path

    names = url_names()
    for name in sorted(n for n in names if kind_of(n) == "admin-list"):
        url = fill(names[name], {}, name)
        response = client.get(url)
        figures["requests"] += 1
        if found := world.leaked(body(response), world.staff):
            leak(name, f"GET {url} as staff ({response.status_code}) names {found}")
    hidden_ids = [world.cases[key].pk for key in world.hidden_from(world.staff)]
    for model, model_admin in admin.site._registry.items():
        label, path = model._meta.label, case_path(model)
        if path is None or label in ADMIN_NOT_SCOPED:
            continue
        prefix = f"admin:{model._meta.app_label}_{model._meta.model_name}"
        if not isinstance(model_admin, CaseScopedAdmin):
            leak(f"{prefix}_changelist", f"{label}'s admin is not a CaseScopedAdmin")
            continue
        field = model_admin.case_field or path
        row = model._default_manager.filter(**{f"{field}__in": hidden_ids}).first()
        if row is None:
            continue
        for view in ("change", "history", "delete"):
            url = fill(names[f"{prefix}_{view}"].replace("<path:object_id>", str(row.pk)), {}, view)
            missing = fill(names[f"{prefix}_{view}"].replace("<path:object_id>", "99999999"), {}, view)
            got, expected = client.get(url), client.get(missing)
            figures["requests"] += 2
            if got.status_code != expected.status_code or got.status_code == 200:
                leak(f"{prefix}_{view}", f"GET {url} as staff: {got.status_code}, a missing row {expected.status_code}")
