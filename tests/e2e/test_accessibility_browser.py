"""WCAG 2.1 AA in the browser (issue 31): axe-core on every page, for every role, at 1366 and
390 px, each case type's page with each of its tabs open in turn; a test that shows the check
fails on a deliberately unlabelled input; and browser tests for what axe cannot see (the
charts' tables, live regions, focus after htmx swaps, the skip link and focus ring, reduced
motion, 200 % zoom).

Which pages: every URL pattern of casework/urls.py outside /api/ (and one page of each kind of
/admin/, Django's own), its arguments filled from the demo data (ARGS by URL name, BY_NAME by
argument name; a new pattern with an argument neither fills fails the test, naming it). A
pattern is a page when GET answers a whole HTML document, whatever its status; POST-only
endpoints, fragments htmx swaps into a page (checked in that page, each tab's panel once its
content loaded), files and redirects are not. Every role visits the pages it may open
(anonymous: those marked login_not_required).

Time (about 60 s on two cores, 10 s of it the demo data): one demo database and live server
for the whole check; two browsers side by side (the investigator's pages, the other roles');
one browser context per role; one visit per page for both widths (the window narrowed in
place); axe on the whole document the first time a page is seen at a width, then only on the
parts that changed (a tab's panel, another role's navigation); a role's page is not visited at
all when the server gave it exactly what a checked role got (_server_view).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from html import unescape
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from playwright.sync_api import expect

from tests.chat.fixtures import worker_thread  # noqa: F401 - fixture
from tests.demo_snapshot import demo_loaded
from tests.e2e.axe import axe_violations, describe
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(settings.VAR_DIR) / "screenshots"

WIDTHS = (1366, 390)
ZOOMED = 1366 // 2  # the width 200 % zoom leaves a 1366 px window
# The demo's person for each role (casework/cases/demo.py); None: not logged in.
PEOPLE = {"anonymous": None, "investigator": "alice", "manager": "mona", "release manager": "rita", "admin": "admin"}

# Not pages: what GET gives is a file, a redirect with a side effect, or the operations' JSON.
NOT_PAGES = {
    "logout": "POST only",
    "healthz": "JSON for the load balancer",
    "metrics": "Prometheus text",
    "fraud:import_template": "a CSV file",
    "case_report:download": "a PDF (WeasyPrint; seconds per render)",
    "case_attachments:download": "the evidence file itself",
    "notifications:open": "marks the notification read and redirects to its subject",
    "entities:graph_json": "JSON the graph page reads",
    "entities:case_graph_json": "JSON the graph page reads",
}

# Django's admin: its own templates, the same few for every model, so one page of each kind
# (and each kind of widget: inlines, autocomplete, split date and time, filter_horizontal).
ADMIN_PAGES = [
    ("admin:index", {}),
    ("admin:app_list", {"app_label": "cases"}),
    ("admin:cases_case_changelist", {}),
    ("admin:cases_case_add", {}),
    ("admin:cases_case_change", {"object_id": "case"}),
    ("admin:access_role_change", {"object_id": "role"}),
    ("admin:auth_user_change", {"object_id": "user"}),
    ("admin:audit_auditentry_change", {"object_id": "audit"}),
]


@dataclass
class Demo:
    """The demo data the pages' arguments come from."""

    cases: dict[str, object]  # case type -> one open case of that type
    closed: dict[str, object]  # case type -> one decided case
    values: dict[str, object] = field(default_factory=dict)


def _demo() -> Demo:
    from agents.chat.services import message_send
    from agents.evals.models import eval_run_record
    from agents.evals.report import build_report
    from agents.models import AgentRun
    from audit.models import AuditEntry
    from casework.access.links import link_path
    from casework.access.models import InfoRequest, Role
    from casework.cases.models import Case
    from casework.cases.saved_views.services import saved_view_create
    from casework.support.models import KBArticle

    demo_loaded()
    order = {"awaiting_decision": 0, "awaiting_response": 1, "in_progress": 2, "new": 3}
    cases, closed = {}, {}
    for case in Case.objects.order_by("reference"):
        if case.is_closed:
            closed.setdefault(case.case_type, case)
        elif order.get(case.status, 9) < order.get(getattr(cases.get(case.case_type), "status", ""), 10):
            cases[case.case_type] = case
    users = {u.username: u for u in get_user_model().objects.all()}
    alice = users["alice"]
    fraud = cases["fraud_alert"]
    answer = message_send(actor=alice, case=fraud, content="Why this risk level?")
    saved_view_create(actor=alice, name="Critical fraud", query="case_type=fraud_alert&priority=critical", pinned=True)
    scenario = {"id": "high_p95", "category": "high", "status": "failed", "failures": ["decision_quality: x"],
                "judge": {"status": "skipped", "reason": "offline"},
                "scores": {"tool_usage": 1.0, "decision_quality": 0.0, "error_handling": 1.0},
                # a trace the run names, so that its waterfall page is a page (the chat's, here)
                "trace_ids": [answer.trace_id or answer.conversation.trace_id]}
    run = eval_run_record(report=build_report("release_risk", [scenario], seconds=1.0, config={
        "provider": "offline", "model": "offline-rules-v1", "prompt_version": "p1", "judge": "skipped"}))
    link = next(r for r in InfoRequest.objects.filter(kind=InfoRequest.Kind.EMPLOYEE, answered_at__isnull=True,
                                                      cancelled_at__isnull=True) if r.state() == "open")
    demo = Demo(cases=cases, closed=closed)
    demo.values = {
        "token": link_path(link).rstrip("/").rsplit("/", 1)[-1],
        "article_id": KBArticle.objects.order_by("article_id").first().article_id,
        "ticket_id": cases["support_ticket"].support_ticket.ticket_id,
        "release_id": cases["release_risk"].release.release_id,
        "manager_request": InfoRequest.objects.filter(kind=InfoRequest.Kind.MANAGER,
                                                      recipient__user=users["mona"]).first().pk,
        "run": AgentRun.objects.filter(case=fraud).order_by("pk").first().pk,
        "chat_trace": answer.trace_id or answer.conversation.trace_id,
        "eval_run": run.pk,
        "admin_case": fraud.pk,
        "admin_role": Role.objects.order_by("pk").first().pk,
        "admin_user": users["alice"].pk,
        "admin_audit": AuditEntry.objects.order_by("pk").first().pk,
    }
    return demo


# How to fill each argument of a page's URL: by URL name where the value depends on the page,
# else by argument name. Each gives a list of kwargs (one page each).
def _per_type(demo: Demo) -> list[dict]:
    return [{"reference": case.reference} for case in demo.cases.values()]


ARGS: dict[str, Callable[[Demo], list[dict]]] = {
    # one open case of each type, and one decided (its decision shown, no forms)
    "cases:detail": lambda d: _per_type(d) + [{"reference": c.reference} for c in d.closed.values()],
    "access:respond": lambda d: [{"token": d.values["token"]}],
    "access:inbox_detail": lambda d: [{"pk": d.values["manager_request"]}],
    "agents:run_trace": lambda d: [{"reference": d.cases["fraud_alert"].reference, "run_id": d.values["run"]}],
    "chat:trace": lambda d: [{"reference": d.cases["fraud_alert"].reference, "trace_id": d.values["chat_trace"]}],
    "evals:run": lambda d: [{"pk": d.values["eval_run"]}],
    "evals:add": lambda d: [{"reference": d.closed["fraud_alert"].reference}],
    "support:kb_article": lambda d: [{"article_id": d.values["article_id"]}],
    # the entity named by the most cases (the demo's ACC-1013 is in three types)
    "entities:detail": lambda d: [{"pk": _busiest_entity()}],
    "entities:graph": lambda d: [{"pk": _busiest_entity()}],
}


def _busiest_entity() -> int:
    from django.db.models import Count

    from casework.entities.models import Entity

    return Entity.objects.annotate(n=Count("mentions")).order_by("-n", "pk").values_list("pk", flat=True)[0]
BY_NAME: dict[str, Callable[[Demo, str], object]] = {
    # a pattern's reference is a case of its own type (fraud:* a fraud alert), or any case
    "reference": lambda d, ns: (d.cases.get(NAMESPACE_TYPES.get(ns, "")) or d.cases["fraud_alert"]).reference,
    "ticket_id": lambda d, ns: d.values["ticket_id"],
    "release_id": lambda d, ns: d.values["release_id"],
    "token": lambda d, ns: d.values["token"],
    "article_id": lambda d, ns: d.values["article_id"],
    "tab": lambda d, ns: "report",
    # ids of a case's own things (tasks, messages, runs): POST endpoints and fragments, never
    # pages; any id makes the URL, and what it answers (405, a fragment) says it is no page
    "pk": lambda d, ns: 1,
    "run_id": lambda d, ns: d.values["run"],
    "message_id": lambda d, ns: 1,
    # the evaluation run's one scenario; an inbound email provider (a POST endpoint)
    "scenario_id": lambda d, ns: "high_p95",
    "provider": lambda d, ns: "raw",
    # a detection rule's version and what to do with it (POST endpoints)
    "number": lambda d, ns: 1,
    "action": lambda d, ns: "approve",
    "trace_id": lambda d, ns: d.values["chat_trace"],
    # a person's "what can they see" page
    "username": lambda d, ns: "alice",
}
NAMESPACE_TYPES = {"fraud": "fraud_alert", "access": "access_change", "support": "support_ticket",
                   "transactions": "transaction_investigation", "releases": "release_risk"}


def _patterns(resolver=None, prefix="", namespace=""):
    """(route, name, pattern) for every URL pattern, names with their namespaces."""
    resolver = resolver or get_resolver()
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            ns = ":".join(filter(None, [namespace, entry.namespace]))
            yield from _patterns(entry, prefix + str(entry.pattern), ns)
        elif isinstance(entry, URLPattern) and entry.name:
            yield prefix + str(entry.pattern), ":".join(filter(None, [namespace, entry.name])), entry


def _candidate_urls(demo: Demo) -> tuple[list[str], list[str], list[str]]:
    """Every URL of a pattern outside /api/ and /admin/ (one per kwargs), the ones anonymous
    people may open, and the unfilled patterns (each a failure)."""
    urls, public, unfilled = [], [], []
    for route, name, pattern in _patterns():
        if route.startswith(("api/", "admin/")) or name in NOT_PAGES:
            continue
        kwargs_list = [{}]
        if pattern.pattern.converters:
            if name in ARGS:
                kwargs_list = ARGS[name](demo)
            else:
                missing = [arg for arg in pattern.pattern.converters if arg not in BY_NAME]
                if missing:
                    unfilled.append(f"{name} ({route}): add {', '.join(missing)} to ARGS or BY_NAME")
                    continue
                ns = name.rsplit(":", 1)[0] if ":" in name else ""
                kwargs_list = [{arg: BY_NAME[arg](demo, ns) for arg in pattern.pattern.converters}]
        for kwargs in kwargs_list:
            url = reverse(name, kwargs=kwargs)
            urls.append(url)
            if getattr(pattern.callback, "login_required", True) is False:
                public.append(url)
    return urls, public, unfilled


def _is_page(response) -> bool:
    body = b"" if response.streaming else response.content[:400].lstrip().lower()
    return response.get("Content-Type", "").startswith("text/html") and body.startswith(b"<!doctype html")


def _pages(urls: list[str], public: list[str]) -> list[str]:
    """The URLs that answer a whole HTML document (whatever the status: an error page is a page
    too), asked as the admin, or as nobody for the pages anyone may open."""
    admin, anonymous = Client(), Client()
    admin.force_login(get_user_model().objects.get(username=PEOPLE["admin"]))
    return [url for url in urls if _is_page((anonymous if url in public else admin).get(url))]


def _normalised(html: str) -> str:
    html = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", html)
    return re.sub(r"[0-9]+", "0", html)


def _server_view(client: Client, url: str) -> tuple[int, str, str]:
    """What this person's browser would be given for the page: the status, the navigation (which
    page is current left out) and the main content with the fragments it loads at once (a case's
    agent runs, its conversation), each with numbers made 0 and the CSRF token left out."""
    response = client.get(url)
    html = response.content.decode()
    header = re.search(r'<header class="topbar">.*?</header>', html, re.S)
    main = re.search(r"<main\b.*?</main>", html, re.S)
    if not header or not main:
        return response.status_code, url, html  # not one of our pages (Django's admin): always checked
    main = main.group(0)
    loaded = [client.get(unescape(path)).content.decode()
              for tag in re.findall(r"<[^>]*\bhx-trigger=\"load\"[^>]*>", main)
              for path in re.findall(r'\bhx-get="([^"]+)"', tag)]
    return (response.status_code, _normalised(header.group(0).replace(' aria-current="page"', "")),
            _normalised(main + "".join(loaded)))


# What htmx still has to do, counted by the page itself (an init script), so that a page is
# checked once the content its tabs load has arrived and settled, whatever the machine's speed:
# requests in flight (beforeRequest .. afterRequest), swaps not yet settled (beforeSwap ..
# afterSettle: the settle comes after htmx's settle delay), and every element that loads its
# content by itself (hx-trigger="load", "load delay:...") until its own request has ended.
# No quiet period is taken as "settled": a late load is waited for, not missed.
HTMX_IDLE_SCRIPT = """
window.__htmxBusy = 0; window.__htmxSettling = 0;
document.addEventListener('htmx:beforeRequest', () => { window.__htmxBusy++; });
document.addEventListener('htmx:afterRequest', (event) => { window.__htmxBusy--; event.detail.elt.__cwLoaded = true; });
document.addEventListener('htmx:beforeSwap', (event) => { if (event.detail.shouldSwap) window.__htmxSettling++; });
document.addEventListener('htmx:afterSettle', () => { window.__htmxSettling = Math.max(0, window.__htmxSettling - 1); });
"""
HTMX_IDLE = """() => document.readyState === 'complete' && window.__htmxBusy <= 0 && window.__htmxSettling <= 0
  && [...document.querySelectorAll('[hx-trigger^="load"]')].every(element => element.__cwLoaded)"""
# Two frames: what the page does once a panel is shown (a11y.js sees a table start scrolling).
NEXT_FRAMES = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"

# What a part of the page is, as markup with every number made 0 and the CSRF token left out:
# the same signature at the same width is the same thing to axe (another role's queue with the
# same rows, a case's tab that no role changes), so it is checked once.
SIGNATURE = """(selector) => {
  const element = document.querySelector(selector);
  if (!element) return '';
  const copy = element.cloneNode(true);
  copy.querySelectorAll('[name=csrfmiddlewaretoken]').forEach(input => input.removeAttribute('value'));
  const text = copy.outerHTML.replace(/[0-9]+/g, '0');
  let h1 = 0xdeadbeef, h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  return selector + ':' + (h1 >>> 0).toString(16) + (h2 >>> 0).toString(16) + ':' + text.length;
}"""
REGIONS = ("body > header", "main")


def _settle(page) -> None:
    page.wait_for_function(HTMX_IDLE, polling=25)
    # what a <details> folds away is checked too (axe skips hidden content)
    page.evaluate("() => document.querySelectorAll('main details:not([open])').forEach(d => d.open = true)")
    page.evaluate(NEXT_FRAMES)


@dataclass
class Check:
    """The violations found, and what was checked (by signature; pages whole, by width and
    status), shared by the two browsers that do the checking (claims under the lock)."""

    found: list[str] = field(default_factory=list)
    seen: set = field(default_factory=set)
    whole: set = field(default_factory=set)
    visits: dict = field(default_factory=dict)  # (role, width, url) -> status
    blocked: list[str] = field(default_factory=list)
    runs: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def claim(self, done: set, keys) -> list:
        """The keys nobody checked yet, now marked as checked."""
        with self.lock:
            new = [key for key in keys if key not in done]
            done.update(keys)
            return new

    def axe(self, page, where: str, selector: str | None = None) -> None:
        found = describe(axe_violations(page, selector), where)
        with self.lock:
            self.found += found
            self.runs += 1

    def reflow(self, page, width: int, where: str) -> None:
        """WCAG 1.4.10: the page fits the window's width; only a wide table scrolls, in its box."""
        if page.viewport_size["width"] != width:
            page.set_viewport_size({"width": width, "height": 900})
        wide = page.evaluate("() => document.documentElement.scrollWidth")
        if wide > width:
            with self.lock:
                self.found.append(f"{where} at {width}px: reflow (the page is {wide} px wide: it scrolls sideways)")

    def parts(self, page, width: int, where: str, selectors, whole: bool) -> None:
        """axe on the parts not yet seen at this width (the whole document when `whole`)."""
        signatures = {(width, page.evaluate(SIGNATURE, selector)): selector for selector in selectors}
        new = [signatures[signature] for signature in self.claim(self.seen, list(signatures))]
        if whole:
            self.axe(page, where)
        for selector in new if not whole else []:
            self.axe(page, f"{where} {selector}", selector)


def _click_tab(page, tab_id: str) -> str:
    """Open a tab as a click does (tabs.js), without Playwright's waits; its panel's selector."""
    return "#" + page.evaluate("id => { const tab = document.getElementById(id); tab.click(); "
                               "return tab.getAttribute('aria-controls'); }", tab_id)


def _check_width(page, check: Check, width: int, where: str, whole: bool) -> None:
    """The page (or the parts of it no visit at this width showed yet), then each tab's panel."""
    if page.viewport_size["width"] != width:
        page.set_viewport_size({"width": width, "height": 900})
    tabs = page.evaluate("() => [...document.querySelectorAll('[role=tablist] [role=tab]')].map(t => t.id)")
    if tabs:
        _click_tab(page, tabs[0])
    _settle(page)
    check.parts(page, width, f"{where} at {width}px", REGIONS, whole)
    for tab in tabs[1:]:
        panel = _click_tab(page, tab)
        _settle(page)
        check.parts(page, width, f"{where} at {width}px {panel}", [panel], whole=False)
    check.reflow(page, width, where)


@dataclass
class Plan:
    """One role's pages, and its browser's session cookie (None: not signed in)."""

    role: str
    session: str | None
    urls: list[str]


def _browse(browser, base_url: str, plan: Plan, check: Check) -> None:
    """The role's pages in one browser context: each at 1366 and 390 px (one visit, the window
    narrowed in place as a person narrows or zooms theirs), then at 683 px for reflow."""
    context = browser.new_context(base_url=base_url, viewport={"width": WIDTHS[0], "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    context.add_init_script(script=HTMX_IDLE_SCRIPT)
    if plan.session:
        context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "url": base_url, "value": plan.session}])
    page = context.new_page()
    page.js_errors = []
    page.on("pageerror", lambda exc: page.js_errors.append(str(exc)))
    page.on("console", lambda message: check.blocked.append(f"{page.url}: {message.text}")
            if "Content Security Policy" in message.text else None)
    try:
        for url in plan.urls:
            if page.viewport_size["width"] != WIDTHS[0]:
                page.set_viewport_size({"width": WIDTHS[0], "height": 900})
            status = page.goto(url).status
            where = f"{plan.role} {url} ({status})"
            for width in WIDTHS:
                check.visits[(plan.role, width, url)] = status
                first = bool(check.claim(check.whole, [(width, url, status)]))
                _check_width(page, check, width, where, whole=first)
            # 200 % zoom of a 1366 px window lays the page out 683 px wide: nothing lost
            check.reflow(page, ZOOMED, f"{where} zoomed to 200 %")
            assert not page.js_errors, f"{where}: {page.js_errors}"
    finally:
        context.close()


def _second_browser(plans: list[Plan], base_url: str, check: Check, failures: list) -> None:
    """A thread's own Chromium (Playwright's sync API keeps to its thread) for some roles: the
    server renders one page while the other browser runs axe on another."""
    from playwright.sync_api import sync_playwright

    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                for plan in plans:
                    _browse(browser, base_url, plan, check)
            finally:
                browser.close()
    except BaseException as exc:  # noqa: BLE001 - raised again in the test's thread
        failures.append(exc)


@pytest.mark.long(seconds=200)
def test_every_page_and_tab_meets_wcag_21_aa_for_every_role_at_both_widths(browser, live_server, settings,
                                                                             tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    # /audit/key/ with a key to show (its PEM and verifier key), not only the "no key" warning.
    from audit.checkpoints import signing_key_generate

    settings.AUDIT_SIGNING_KEY = signing_key_generate().decode()
    started = time.monotonic()
    demo = _demo()
    urls, public, unfilled = _candidate_urls(demo)
    assert not unfilled, "Pages whose arguments the accessibility test cannot fill:\n" + "\n".join(unfilled)
    pages = _pages(urls, public)
    admin_pages = [reverse(name, kwargs={k: demo.values.get(f"admin_{v}", v) for k, v in kwargs.items()})
                   for name, kwargs in ADMIN_PAGES]
    seeded = time.monotonic()

    check = Check()
    shown: set[tuple] = set()  # what the server gave someone whose browser is checked (_server_view)
    same = 0
    plans = []
    for role, username in PEOPLE.items():
        client = Client()
        if username:
            client.force_login(get_user_model().objects.get(username=username))
        todo = []
        for url in [url for url in pages if (url in public) == (username is None)]:
            status, header, main = _server_view(client, url)
            # Another person was given the same (an error page, a page no role changes): checked.
            if {("header", header), (status, main)} <= shown:
                same += 1
                continue
            shown.update({("header", header), (status, main)})
            todo.append(url)
        if role == "admin":
            todo += admin_pages
        session = client.cookies[settings.SESSION_COOKIE_NAME].value if username else None
        plans.append(Plan(role, session, todo))

    # Two browsers: the investigator's pages (the most) in this thread, the other roles' in another.
    failures: list[BaseException] = []
    investigator = next(plan for plan in plans if plan.role == "investigator")
    rest = [plan for plan in plans if plan is not investigator]
    others = threading.Thread(target=_second_browser, args=(rest, live_server.url, check, failures))
    others.start()
    try:
        _browse(browser, live_server.url, investigator, check)
    finally:
        others.join()
    if failures:
        raise failures[0]

    elapsed = time.monotonic() - started
    print(f"\naxe: {len(pages) + len(admin_pages)} pages, {len(PEOPLE)} roles (anonymous included), "
          f"{len(WIDTHS)} widths: {len(check.visits) // len(WIDTHS)} page visits ({same} role-pages skipped: the server "
          f"gave them what another checked browser had), {check.runs} axe runs, {elapsed:.0f} s "
          f"(seeding {seeded - started:.0f} s)")
    blocked, found = check.blocked, check.found
    assert not blocked, "The Content-Security-Policy blocked something:\n" + "\n".join(blocked)
    assert not found, f"{len(found)} WCAG 2.1 A/AA violations:\n" + "\n".join(found)
    # every case type's page was seen, with its tabs, at both widths, by a role whose person
    # sees it (alice works fraud and transactions only; the admin sees every case)
    for case in demo.cases.values():
        for width in WIDTHS:
            assert 200 in {check.visits.get((role, width, f"/cases/{case.reference}/")) for role in PEOPLE}


def test_an_unlabelled_input_fails_the_check_naming_the_rule_and_the_element(page):
    """The check can fail: the login page with an input nobody labelled."""
    page.goto("/login/")
    assert axe_violations(page) == []
    page.evaluate("""() => {
        const input = document.createElement('input');
        input.type = 'text'; input.id = 'deliberately-unlabelled';
        document.querySelector('main form').appendChild(input);
    }""")
    found = describe(axe_violations(page), "/login/")
    assert any(": label (critical" in line and "#deliberately-unlabelled" in line for line in found), found


# --- What axe cannot see ----------------------------------------------------------------------

def _live(page) -> str:
    return page.locator("#live-region").inner_text()


def test_every_dashboard_chart_has_its_figures_as_a_table(page, log_in, alice):
    from casework.cases.models import Case, Decision
    from casework.cases.services import case_create

    for n, case_type in enumerate(["fraud_alert", "fraud_alert", "access_change"]):
        case = case_create(actor=alice, case_type=case_type, title=f"Case {n}")
    Decision.objects.create(case=case, outcome="accepted", reason="checked", decided_by=alice)
    Case.objects.filter(pk=case.pk).update(status="closed", created_at=case.created_at - timedelta(hours=6),
                                           closed_at=case.created_at - timedelta(hours=1))
    log_in(page, "alice", "alice-pass-123")
    charts = page.locator("canvas[data-chart]")
    assert charts.count() == 8
    page.wait_for_function("() => [...document.querySelectorAll('canvas[data-chart]')]"
                           ".every(c => window.Chart && Chart.getChart(c))")
    for canvas_id in charts.evaluate_all("canvases => canvases.map(c => c.id)"):
        drawn = page.evaluate("id => { const data = Chart.getChart(id).data; "
                              "return {labels: data.labels, series: data.datasets.map(d => d.data)}; }", canvas_id)
        box = page.locator(f"#{canvas_id}-data")
        table = box.locator("table")
        assert not table.is_visible()  # folded: one "Show as table" per chart, by keyboard too
        box.locator("summary").focus()
        page.keyboard.press("Enter")
        assert table.is_visible()
        caption = table.locator("caption").inner_text()
        assert caption == page.locator(f"#{canvas_id}").evaluate("c => c.closest('figure').querySelector('figcaption')"
                                                               ".textContent")
        rows = table.locator("tbody tr").evaluate_all(
            "rows => rows.map(r => [...r.children].map(cell => cell.textContent.trim()))")
        if not drawn["labels"]:
            assert rows == [["No figures yet."]], canvas_id
            continue
        assert [row[0] for row in rows] == [str(label) for label in drawn["labels"]], canvas_id
        for column, values in enumerate(drawn["series"], start=1):
            shown = [row[column] for row in rows]
            assert shown == ["–" if v is None else shown[i] for i, v in enumerate(values)], canvas_id
            assert [float(s) for s in shown if s != "–"] == [float(v) for v in values if v is not None], canvas_id
    assert not page.js_errors


@pytest.mark.usefixtures("worker_thread")
def test_live_regions_announce_a_run_ending_and_a_streamed_answer(page, log_in, api, rita, settings):
    from agents.models import AgentRun
    from casework.releases.models import Release
    from tests.releases.conftest import SEED

    settings.OFFLINE_STREAM_DELAY_SECONDS = 0.02  # the answer arrives word by word
    assert api.post("/api/releases/", SEED, format="json").status_code == 201
    case = Release.objects.get(release_id=SEED["release_id"]).case
    done = AgentRun.objects.filter(case=case).latest("pk")
    # The detective is assessing it again (as after "Re-assess"): the run panel polls.
    again = AgentRun.objects.create(case=case, pipeline=done.pipeline, mode=done.mode, status=AgentRun.Status.RUNNING)
    log_in(page, "rita", "rita-pass-123", next_path=f"/cases/{case.reference}/")
    live = page.locator("#live-region")
    assert live.get_attribute("aria-live") == "polite" and live.get_attribute("role") == "status"
    expect(page.locator("#agent-run-panel")).to_have_attribute("data-announce", "The agents are working.")
    assert _live(page) == ""  # what the page showed when it opened is not announced

    # Rita waits on the run's row in the Agents tab; the run ends while she is there.
    page.get_by_role("tab", name="Agent runs").click()
    trace = page.locator("#agent-run-panel").get_by_role("link", name="Trace and calls").first
    trace.focus()
    AgentRun.objects.filter(pk=again.pk).update(status=AgentRun.Status.COMPLETED)
    expect(live).to_have_text(f"Agent runs ended: {done.pipeline} completed.", timeout=8_000)
    # the poll replaced the panel under her focus: she is on the same link, not at the top
    assert page.evaluate("() => [document.activeElement.getAttribute('href'), document.activeElement.textContent]") \
        == [f"/cases/{case.reference}/runs/{again.pk}/trace/", "Trace and calls"]

    page.get_by_role("tab", name="Ask the agent").click()
    page.get_by_label("Your question").fill("Why this severity?")
    page.get_by_role("button", name="Ask").click()
    expect(live).to_have_text("The agent is answering.")  # the answer to her own question, as it starts
    expect(page.locator('.chat-assistant[data-status="done"]')).to_be_visible(timeout=15_000)
    expect(live).to_contain_text("The agent answered: The release is rated high because:")
    assert not page.js_errors


def test_the_bulk_actions_result_is_announced(page, log_in, alice):
    from casework.cases.services import case_create

    cases = [case_create(actor=alice, case_type="fraud_alert", title=f"Alert {n}") for n in range(2)]
    log_in(page, "alice", "alice-pass-123", next_path="/cases/")
    for case in cases:
        page.get_by_label(f"Select {case.reference}").check()
    page.get_by_role("button", name="Apply to selected").click()
    expect(page.locator("#bulk-confirm-button")).to_be_focused()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    expect(page.locator("#live-region")).to_have_text("Assigned 2 cases.")
    assert not page.js_errors


def test_focus_stays_in_place_after_htmx_swaps(page, log_in, alice):
    from casework.cases.services import case_create

    case = case_create(actor=alice, case_type="access_change", title="Access level for Jan")
    log_in(page, "alice", "alice-pass-123", next_path=f"/cases/{case.reference}/")
    page.get_by_role("tab", name="Tasks").click()

    def focused() -> dict:
        return page.evaluate("() => { const e = document.activeElement; return {id: e.id, tag: e.tagName, "
                             "text: e.textContent.trim().slice(0, 40), visible: e.matches(':focus-visible')}; }")

    # the template's button goes away with the swap: the focus goes to the tasks, not the page top
    page.get_by_role("button", name=re.compile("Add tasks from template")).focus()
    page.keyboard.press("Enter")
    expect(page.locator("#case-tasks li.task")).to_have_count(3)
    expect(page.locator("#case-tasks")).to_be_focused()
    # a task done: the focus stays on that task's button, now "Reopen"
    first = page.locator("#case-tasks li.task").first
    first.get_by_role("button", name="Mark done").focus()
    page.keyboard.press("Enter")
    expect(first.get_by_role("button", name="Reopen")).to_be_focused()
    assert focused()["visible"], focused()
    # a comment added: back on the button that sent it
    page.get_by_role("textbox", name=re.compile("comment", re.I)).fill("Asked HR for the record.")
    page.get_by_role("button", name="Add comment").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#comments")).to_contain_text("Asked HR for the record.")
    expect(page.get_by_role("button", name="Add comment")).to_be_focused()
    # the timeline's filter: the chosen filter keeps the focus
    page.locator("#timeline-show-people").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#timeline-show-people")).to_have_attribute("aria-current", "true")
    expect(page.locator("#timeline-show-people")).to_be_focused()
    # asking the agent: the focus is back in the question box, ready for the next one
    page.get_by_role("tab", name="Ask the agent").click()
    page.get_by_label("Your question").fill("What was found?")
    page.get_by_role("button", name="Ask").focus()
    page.keyboard.press("Enter")
    expect(page.locator('.chat-assistant[data-status="done"]')).to_be_visible()
    expect(page.get_by_label("Your question")).to_be_focused()
    assert not page.js_errors


def test_a_skip_link_and_a_visible_focus_on_every_tab_stop(page, log_in, alice):
    from casework.cases.services import case_create

    case = case_create(actor=alice, case_type="fraud_alert", title="Deposit-withdraw cycling")
    log_in(page, "alice", "alice-pass-123", next_path="/cases/")
    page.keyboard.press("Tab")
    skip = page.locator("a.skip-link")
    expect(skip).to_be_focused()
    box = skip.bounding_box()
    assert box and box["y"] >= 0 and box["height"] > 10, box  # shown when it has the focus
    page.keyboard.press("Enter")
    expect(page.locator("main#main")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_label("Search")).to_be_focused()  # the first control of the main content

    # Every stop of the keyboard shows where it is: an outline or Pico's ring (a box shadow).
    ring = """() => { const e = document.activeElement, s = getComputedStyle(e);
      const outline = s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2;
      return {what: e.tagName + (e.id ? '#' + e.id : '') + ' ' + (e.textContent || e.value || '').trim().slice(0, 30),
              shown: e.matches(':focus-visible') && (outline || s.boxShadow !== 'none')}; }"""
    for url in ("/cases/", f"/cases/{case.reference}/"):
        page.goto(url)
        page.keyboard.press("Tab")  # the skip link
        stops = []
        for _ in range(30):
            page.keyboard.press("Tab")
            if page.evaluate("() => document.activeElement === document.body"):
                break  # past the last stop
            stops.append(page.evaluate(ring))
        assert len(stops) >= 10, (url, stops)
        hidden = [s["what"] for s in stops if not s["shown"]]
        assert not hidden, f"{url}: no visible focus on {hidden}"


def test_reduced_motion_is_honoured_and_200_percent_zoom_loses_nothing(browser, live_server, alice):
    from casework.cases.services import case_create

    case = case_create(actor=alice, case_type="fraud_alert", title="Deposit-withdraw cycling")
    client = Client()
    client.force_login(alice)
    cookie = {"name": settings.SESSION_COOKIE_NAME, "url": live_server.url,
              "value": client.cookies[settings.SESSION_COOKIE_NAME].value}
    # a button's colour change, and the busy spinner (an SVG that turns by itself)
    motion = """() => { const busy = document.createElement('span'); busy.setAttribute('aria-busy', 'true');
      document.querySelector('main').appendChild(busy);
      const button = getComputedStyle(document.querySelector('main button'));
      return {transition: Math.max(...button.transitionDuration.split(',').map(parseFloat)),
              spinner_turns: getComputedStyle(busy, '::before').backgroundImage.includes('animation')}; }"""
    seen = {}
    for preference in ("no-preference", "reduce"):
        context = browser.new_context(base_url=live_server.url, reduced_motion=preference)
        context.add_cookies([cookie])
        page = context.new_page()
        page.goto("/cases/")
        seen[preference] = page.evaluate(motion)
        context.close()
    assert seen["no-preference"]["transition"] >= 0.1 and seen["no-preference"]["spinner_turns"], seen
    assert seen["reduce"]["transition"] < 0.001 and not seen["reduce"]["spinner_turns"], seen

    # 200 % zoom of a 1366 x 768 window: 683 x 384 CSS pixels, each drawn with 2 x 2 device pixels.
    context = browser.new_context(base_url=live_server.url, viewport={"width": 683, "height": 384},
                                  device_scale_factor=2)
    context.add_cookies([cookie])
    page = context.new_page()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for name, url in (("dashboard", "/"), ("queue", "/cases/"), ("case", f"/cases/{case.reference}/")):
        page.goto(url)
        assert page.evaluate("document.documentElement.scrollWidth") <= 683, f"sideways scroll on {url}"
        # the whole navigation is there (it wraps; Pico's links reach a few pixels past their
        # words on each side), and every tab of a case can be reached
        for link in page.locator("header.topbar a, header.topbar button").all():
            box = link.bounding_box()
            assert box and box["x"] >= -8 and box["x"] + box["width"] <= 683 + 8, (url, link.inner_text(), box)
        page.screenshot(path=str(SCREENSHOTS / f"zoom200-{name}.png"), full_page=True)
    for tab in page.get_by_role("tab").all():
        box = tab.bounding_box()
        assert box and box["x"] + box["width"] <= 683, (tab.inner_text(), box)
    context.close()
