"""Every URL and API operation, tried as each kind of caller, against one table.

The routes are read from the URL resolver, so a new page or endpoint without a row in
MATRIX fails `test_every_route_has_a_row`. Each row gives the method and, per caller
(anonymous, investigator, manager, admin, employee link holder), what must happen; a release
manager is let in wherever an investigator is (RELEASE_MANAGER lists where that differs), and
alone with admins decides a release (test_only_release_managers_and_admins_decide_releases):

    L  sent to log in: a page redirects to /login/, the API answers 401
    D  refused: 403
    O  let in: the view ran (2xx, 3xx other than to the login page, or the view's own
       400/404/405/409/410 for the placeholder object)
    P  public: let in without an account

The employee link holder has no account: they hold a signed link, which the table tries on
the two routes that take one (the answer page and the answer API); elsewhere they are an
anonymous caller. URL parameters get an existing access case and the real link token;
other ids are placeholders (a view that looks them up answers 404 once it has let the
caller in, which the O category accepts)."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

pytestmark = pytest.mark.django_db

CALLERS = ("anonymous", "investigator", "manager", "admin", "link")
# name -> what a release manager gets where it is not what an investigator gets: nowhere, on
# these placeholder objects (the decision itself is tried on a real release below); and a
# person's own access page: the URL names alice, whose page only she and admins open.
RELEASE_MANAGER: dict[str, str] = {"teams:person_access": "403"}

# name: (method, "anonymous investigator manager admin link")
MATRIX: dict[str, tuple[str, str]] = {
    "access:case_tab": ("GET", "L 200 403 200 L"),
    "access:decide": ("POST", "L 302 403 302 L"),
    "access:inbox": ("GET", "L 403 200 403 L"),
    "access:inbox_detail": ("GET", "L 403 404 403 L"),
    "access:mutation_new": ("GET", "L 200 403 200 L"),
    "access:resend": ("POST", "L 404 403 404 L"),
    "access:respond": ("GET", "200 200 200 200 200"),
    "admin:index": ("GET", "L L L 200 L"),
    "agents:rerun": ("POST", "L 404 403 404 L"),
    "agents:run_panel": ("GET", "L 200 403 200 L"),
    "agents:run_trace": ("GET", "L 404 403 404 L"),
    "api-access-employee-answer": ("POST", "400 400 400 400 400"),
    "api-access-inbox": ("GET", "L 403 200 403 L"),
    "api-access-manager-answer": ("POST", "L 403 404 403 L"),
    "api-access-mutation-detail": ("GET", "L 200 403 200 L"),
    "api-access-mutation-submit": ("POST", "L 400 403 400 L"),
    "api-case-attachment-download": ("GET", "L 404 403 404 L"),
    "api-case-attachments": ("GET", "L 200 403 200 L"),
    "api-case-bulk": ("POST", "L 400 403 400 L"),
    "api-case-assign": ("POST", "L 400 403 400 L"),
    "api-case-close": ("POST", "L 400 403 400 L"),
    "api-case-comment": ("POST", "L 400 403 400 L"),
    "api-case-detail": ("GET", "L 200 403 200 L"),
    "api-case-link": ("POST", "L 400 403 400 L"),
    "api-case-list": ("GET", "L 200 403 200 L"),
    "api-case-merge": ("POST", "L 400 403 400 L"),
    "api-case-related": ("GET", "L 200 403 200 L"),
    "api-case-report": ("GET", "L 200 403 200 L"),
    "api-case-task-assign": ("POST", "L 404 403 404 L"),
    "api-case-task-done": ("POST", "L 404 403 404 L"),
    "api-case-task-reopen": ("POST", "L 404 403 404 L"),
    "api-case-tasks": ("POST", "L 400 403 400 L"),
    "api-case-tasks-from-template": ("POST", "L 201 403 201 L"),
    "api-approvals": ("GET", "L 200 403 200 L"),
    "api-approval-approve": ("POST", "L 404 403 404 L"),
    "api-approval-deny": ("POST", "L 404 403 404 L"),
    "approvals:decide": ("POST", "L 404 403 404 L"),
    "approvals:inbox": ("GET", "L 200 403 200 L"),
    "approvals:panel": ("GET", "L 200 403 200 L"),
    "api-conversation": ("GET", "L 200 403 200 L"),
    "api-conversation-ask": ("POST", "L 400 403 400 L"),
    "api-conversation-new": ("POST", "L 201 403 201 L"),
    "api-entity-detail": ("GET", "L 404 403 404 L"),
    # Who may place, lift or export is decided on the object (its case's teams, the person's
    # roles: casework/privacy): on these placeholders everyone signed in meets the 404 or 400.
    "api-entity-subject-access": ("POST", "L 404 404 404 L"),
    # Data-protection officers' and admins' only: anyone else is refused before the body is read
    # (the admin's empty body: 400) and meets a 404 for a request's id.
    "api-erasure-request": ("POST", "L 403 403 400 L"),
    "api-erasure-request-approve": ("POST", "L 404 404 404 L"),
    "api-erasure-request-detail": ("GET", "L 404 404 404 L"),
    "api-erasure-request-resume": ("POST", "L 404 404 404 L"),
    "api-legal-hold-lift": ("POST", "L 404 404 404 L"),
    "api-legal-hold-place": ("POST", "L 400 400 400 L"),
    "api-fraud-alert-capture-retry": ("POST", "L 404 403 404 L"),
    "api-fraud-alert-close": ("POST", "L 404 403 404 L"),
    "api-fraud-alert-create": ("POST", "L 415 403 415 L"),
    "api-fraud-alert-detail": ("GET", "L 404 403 404 L"),
    "api-fraud-alert-reassess": ("POST", "L 404 403 404 L"),
    "api-fraud-alert-rerun": ("POST", "L 404 403 404 L"),
    "api-release-decide": ("POST", "L 404 403 404 L"),
    "api-release-detail": ("GET", "L 404 403 404 L"),
    "api-release-submit": ("POST", "L 400 403 400 L"),
    "api-saved-view-detail": ("GET", "L 404 403 404 L"),
    "api-saved-view-list": ("GET", "L 200 403 200 L"),
    "api-support-close": ("POST", "L 404 403 404 L"),
    "api-support-escalate": ("POST", "L 404 403 404 L"),
    "api-support-intake": ("GET", "L 404 403 404 L"),
    "api-support-message": ("POST", "L 400 403 400 L"),
    "api-support-reply": ("POST", "L 404 403 404 L"),
    "api-support-ticket": ("GET", "L 404 403 404 L"),
    "api-txn-detail": ("GET", "L 404 403 404 L"),
    "api-txn-rates": ("GET", "L 200 200 200 L"),
    "api-txn-rule-version-act": ("POST", "L 404 404 404 L"),
    "api-txn-rule-versions": ("POST", "L 404 403 404 L"),
    "api-txn-rules": ("GET", "L 200 200 200 L"),
    "api-txn-import": ("POST", "L 415 403 415 L"),
    "api-txn-recommendation": ("POST", "L 404 403 404 L"),
    "api-txn-resume": ("POST", "L 404 403 404 L"),
    "api-txn-rule-promote": ("POST", "L 403 404 404 L"),
    "api-txn-start": ("POST", "L 415 403 415 L"),
    "api-txn-decide": ("POST", "L 415 403 415 L"),
    "api-txn-decision": ("GET", "L 404 403 404 L"),
    # Lists: everyone signed in reads; investigators, managers and admins change (placeholder list: 404).
    "api-txn-lists": ("GET", "L 200 200 200 L"),
    "api-txn-list-entries": ("GET", "L 404 404 404 L"),
    "api-txn-list-entry-remove": ("POST", "L 404 404 404 L"),
    # Signature-authenticated, for every caller (a session is no credential here): unsigned is 401.
    "api-action-confirmation": ("POST", "L L L L L"),
    "api-webhook-delivery-replay": ("POST", "L 403 403 404 L"),
    "api-webhook-endpoint-deliveries": ("GET", "L 403 403 404 L"),
    "api-webhook-endpoint-detail": ("GET", "L 403 403 404 L"),
    "api-webhook-endpoint-list": ("GET", "L 403 403 200 L"),
    "api-webhook-endpoint-replay-failed": ("POST", "L 403 403 404 L"),
    "api-webhook-endpoint-rotate": ("POST", "L 403 403 404 L"),
    "audit:key": ("GET", "L 200 200 200 L"),
    "case_attachments:download": ("GET", "L 404 403 404 L"),
    "case_attachments:panel": ("GET", "L 200 403 200 L"),
    "case_attachments:upload": ("POST", "L 302 403 302 L"),
    "case_report:download": ("GET", "L 200 403 200 L"),
    "case_tasks:add": ("POST", "L 302 403 302 L"),
    "case_tasks:assign": ("POST", "L 404 403 404 L"),
    "case_tasks:done": ("POST", "L 404 403 404 L"),
    "case_tasks:from_template": ("POST", "L 302 403 302 L"),
    "case_tasks:panel": ("GET", "L 200 403 200 L"),
    "case_tasks:reopen": ("POST", "L 404 403 404 L"),
    "cases:assign_to_me": ("POST", "L 302 403 302 L"),
    "cases:bulk": ("POST", "L 400 403 400 L"),
    "cases:close": ("POST", "L 400 403 400 L"),
    "cases:comment_add": ("POST", "L 302 403 302 L"),
    "cases:detail": ("GET", "L 200 403 200 L"),
    "cases:export_csv": ("GET", "L 200 403 200 L"),
    "cases:restriction": ("POST", "L 403 403 302 L"),
    "api-case-restriction": ("POST", "L 403 403 400 L"),
    # A lead's (or an admin's): alice works the case but leads no team.
    "budgets:case_budget": ("POST", "L 403 403 302 L"),
    "api-case-budget": ("POST", "L 403 403 400 L"),
    "api-case-budget-stop": ("POST", "L 403 403 400 L"),
    "access_log:who_looked": ("GET", "L 403 403 200 L"),
    "access_log:export": ("GET", "L 403 403 400 L"),
    "teams:list": ("GET", "L 403 403 200 L"),
    "teams:person_access": ("GET", "L 200 403 200 L"),
    "cases:queue": ("GET", "L 200 403 200 L"),
    "cases:timeline": ("GET", "L 200 403 200 L"),
    "chat:message": ("GET", "L 404 403 404 L"),
    "chat:new": ("POST", "L 302 403 302 L"),
    "chat:panel": ("GET", "L 302 403 302 L"),
    "chat:send": ("POST", "L 302 403 302 L"),
    "chat:trace": ("GET", "L 404 403 404 L"),
    "entities:case_graph": ("GET", "L 200 403 200 L"),
    "entities:case_graph_json": ("GET", "L 200 403 200 L"),
    "entities:detail": ("GET", "L 404 403 404 L"),
    "entities:graph": ("GET", "L 404 403 404 L"),
    "entities:graph_json": ("GET", "L 404 403 404 L"),
    "entities:link": ("POST", "L 400 403 400 L"),
    "entities:merge": ("POST", "L 400 403 400 L"),
    "evals:add": ("GET", "L 302 403 302 L"),
    "evals:index": ("GET", "L 403 403 200 L"),
    "evals:run": ("GET", "L 403 403 404 L"),
    "evals:scenario_diff": ("GET", "L 403 403 404 L"),
    "evals:scenario_trace": ("GET", "L 403 403 404 L"),
    "evals:stored": ("GET", "L 403 403 200 L"),
    "evals:stored_review": ("POST", "L 403 403 404 L"),
    "fraud:assessment": ("GET", "L 404 403 404 L"),
    "fraud:capture_retry": ("POST", "L 404 403 404 L"),
    "fraud:alert_enter": ("POST", "L 400 403 400 L"),
    "fraud:import": ("GET", "L 200 403 200 L"),
    "fraud:import_template": ("GET", "L 200 403 200 L"),
    "fraud:index": ("GET", "L 302 302 302 L"),
    "fraud:patterns": ("GET", "L 200 403 200 L"),
    "fraud:reassess": ("POST", "L 404 403 404 L"),
    "fraud:rerun": ("POST", "L 404 403 404 L"),
    "healthz": ("GET", "200 200 200 200 200"),
    "home": ("GET", "L 200 200 200 L"),
    "lifecycles:index": ("GET", "L 200 200 200 L"),
    "login": ("GET", "200 302 302 302 200"),
    "logout": ("POST", "L L L L L"),
    "metrics": ("GET", "200 200 200 200 200"),
    # Sign-in through the identity provider: off (404) unless OIDC_* is configured (tests/people/test_oidc.py).
    "oidc_authentication_callback": ("GET", "404 404 404 404 404"),
    "oidc_authentication_init": ("GET", "404 404 404 404 404"),
    # SCIM provisioning: the identity provider's bearer token only, off (404) without SCIM_TOKEN;
    # with it, every caller here is a 401 (tests/people/test_scim.py).
    "scim:group": ("GET", "404 404 404 404 404"),
    "scim:groups": ("GET", "404 404 404 404 404"),
    "scim:service_provider_config": ("GET", "404 404 404 404 404"),
    "scim:user": ("GET", "404 404 404 404 404"),
    "scim:users": ("GET", "404 404 404 404 404"),
    "notifications:inbox": ("GET", "L 200 200 200 L"),
    "notifications:open": ("GET", "L 404 404 404 L"),
    "notifications:preferences": ("GET", "L 200 200 200 L"),
    "notifications:read_all": ("POST", "L 302 302 302 L"),
    "case_actions:action_resolve": ("POST", "L 302 403 302 L"),
    "case_actions:case_actions": ("GET", "L 200 403 200 L"),
    "people:no_role": ("GET", "L 200 200 200 L"),
    "releases:decide": ("POST", "L 404 403 404 L"),
    "releases:index": ("GET", "L 200 403 200 L"),
    "releases:overview": ("GET", "L 404 403 404 L"),
    "releases:reassess": ("POST", "L 404 403 404 L"),
    "saved_views:create": ("POST", "L 302 403 302 L"),
    "saved_views:delete": ("POST", "L 404 403 404 L"),
    "saved_views:index": ("GET", "L 200 403 200 L"),
    "saved_views:open": ("GET", "L 404 403 404 L"),
    "saved_views:update": ("POST", "L 404 403 404 L"),
    "schema": ("GET", "L 200 200 200 L"),
    "support:auto_sent": ("GET", "L 200 403 200 L"),
    "support:close": ("POST", "L 404 403 404 L"),
    "support:escalate": ("POST", "L 404 403 404 L"),
    "support:escalate_group": ("POST", "L 404 403 404 L"),
    # Public (a signed link, no account): the access link's token is not a feedback token.
    "support:feedback": ("GET", "400 400 400 400 400"),
    "support:kb_article": ("GET", "L 404 403 404 L"),
    "support:message_new": ("GET", "L 200 403 200 L"),
    "support:pending": ("POST", "L 404 403 404 L"),
    "support:queue": ("GET", "L 200 403 200 L"),
    "support:reply": ("POST", "L 404 403 404 L"),
    # Authenticated by the email provider's own scheme, never a login; unconfigured, it refuses all.
    "support:inbound_email": ("POST", "403 403 403 403 403"),
    "support:resend": ("POST", "L 404 403 404 L"),
    "support:triage": ("GET", "L 404 403 404 L"),
    "swagger-ui": ("GET", "L 200 200 200 L"),
    "transactions:index": ("GET", "L 200 403 200 L"),
    "transactions:progress": ("GET", "L 404 403 404 L"),
    "transactions:recommendation": ("POST", "L 404 403 404 L"),
    "transactions:resume": ("POST", "L 404 403 404 L"),
    "transactions:rule_edit": ("POST", "L 404 403 404 L"),
    "transactions:rule_promote": ("POST", "L 403 404 404 L"),
    "transactions:rules": ("GET", "L 200 200 200 L"),
    "transactions:rule_disable": ("POST", "L 404 404 404 L"),
    "transactions:rule_new": ("POST", "L 302 403 302 L"),
    "transactions:rule_version_act": ("POST", "L 404 404 404 L"),
    "transactions:rule_version_propose": ("POST", "L 404 403 404 L"),
}


def routes() -> dict[str, str]:
    """name -> route pattern, for every named route outside the Django admin and static."""
    found: dict[str, str] = {}

    def walk(patterns, prefix: str, namespace: str | None):
        for p in patterns:
            if isinstance(p, URLResolver):
                if str(p.pattern).startswith("admin/"):
                    continue
                ns = ":".join(filter(None, [namespace, p.namespace])) or None
                walk(p.url_patterns, prefix + str(p.pattern), ns)
            elif isinstance(p, URLPattern) and p.name:
                found[f"{namespace}:{p.name}" if namespace else p.name] = prefix + str(p.pattern)

    walk(get_resolver().url_patterns, "/", None)
    found["admin:index"] = "/admin/"
    return found


def test_every_route_has_a_row():
    missing = sorted(set(routes()) - set(MATRIX))
    stale = sorted(set(MATRIX) - set(routes()))
    assert not missing, f"Routes with no row in MATRIX: {missing}"
    assert not stale, f"Rows in MATRIX for routes that no longer exist: {stale}"


def url_for(route: str, token: str, reference: str) -> str:
    values = {"reference": reference, "token": token, "tab": "answers", "pk": "999999", "run_id": "999999",
              "trace_id": "t-missing", "release_id": "REL-MISSING", "ticket_id": "T-MISSING",
              "article_id": "KB-MISSING", "id": "999999", "message_id": "999999", "number": "1",
              "action": "approve", "provider": "raw", "scenario_id": "missing", "username": "alice",
              "name": "missing-list", "decision_id": "00000000-0000-4000-8000-000000000000"}
    url = route
    for name, value in values.items():
        for conv in ("str", "int", "slug", "path"):
            url = url.replace(f"<{conv}:{name}>", value)
    assert "<" not in url, url
    return url


@pytest.fixture
def callers(asked, mona, admin_user, alice, rita):
    """A new set of clients per route: a route that logs out must not log out the next.

    Each person signs in once (a sign-in writes its session, an audit entry and a session
    note: ~700 of them cost ~7 s); a later route's client gets that session again only while it
    is stored exactly as it was made (not deleted by a logout, not changed by a request),
    else the person signs in afresh."""
    people = {"investigator": alice, "manager": mona, "admin": admin_user, "release_manager": rita}
    made: dict[str, tuple[str, str]] = {}  # caller -> (session key, its data as made)

    def make() -> dict[str, Client]:
        clients = {name: Client() for name in (*CALLERS, "release_manager")}
        stored = dict(Session.objects.filter(session_key__in=[key for key, _ in made.values()])
                      .values_list("session_key", "session_data"))
        for caller, user in people.items():
            key, data = made.get(caller, ("", ""))
            if stored.get(key) == data:
                clients[caller].cookies[settings.SESSION_COOKIE_NAME] = key
                continue
            clients[caller].force_login(user)
            key = clients[caller].cookies[settings.SESSION_COOKIE_NAME].value
            made[caller] = (key, Session.objects.get(session_key=key).session_data)
        return clients

    return make


def outcome(response) -> str:
    status = response.status_code
    if status == 401 or (status == 302 and response["Location"].startswith(("/login/", "/admin/login/"))):
        return "L"
    return str(status)


@pytest.mark.long(seconds=30)
def test_every_caller_gets_the_status_the_table_gives(callers, asked):
    from casework.access.links import link_token

    token, reference = link_token(asked), asked.mutation.case.reference
    wrong = []
    for name, route in sorted(routes().items()):
        method, expected = MATRIX[name]
        url = url_for(route, token, reference)
        clients = callers()
        wants = dict(zip(CALLERS, expected.split(), strict=True))
        wants["release_manager"] = RELEASE_MANAGER.get(name, wants["investigator"])
        for caller, want in wants.items():
            client = clients[caller]
            response = client.get(url) if method == "GET" else client.post(url, {})
            got = outcome(response)
            if got != want:
                wrong.append(f"{method} {url} as {caller}: {got}, the table says {want}")
    assert not wrong, "\n".join(wrong)


def test_only_release_managers_and_admins_decide_releases(alice, rita, admin_user):
    from casework.releases.models import Release
    from tests.releases.conftest import SEED, release, submit

    decisions = {}
    for user, release_id in ((alice, "rel-a"), (rita, "rel-r"), (admin_user, "rel-x")):
        made, _ = submit(release(SEED, release_id=release_id))
        client = Client()
        client.force_login(user)
        page = client.get(f"/cases/{made.case.reference}/").content.decode()
        assert ('id="release-decide-role"' in page) is (user is alice)  # no form to fill in vain
        decisions[user.username] = (
            client.post(f"/releases/{release_id}/decide/", {"outcome": "deferred", "reason": "Wait."}).status_code,
            client.post(f"/api/releases/{release_id}/decision/", {"outcome": "deferred", "reason": "Wait."},
                        content_type="application/json").status_code,
            client.post(f"/cases/{made.case.reference}/close/", {"outcome": "deferred", "reason": "Wait."}).status_code)
    assert decisions["alice"] == (403, 403, 403)  # the page, the API, and the generic close
    assert decisions["rita"][0] == 302 and decisions["root"][0] == 302
    assert not Release.objects.get(release_id="rel-a").case.is_closed
    assert Release.objects.get(release_id="rel-r").case.is_closed
