"""Every page and endpoint starts here.

/                 home: sends each person to their work
/people/teams/    teams, their case types and people (admins); /people/<username>/access/ what a
                  person may see and why     casework/cases/teams_urls.py
/cases/           the investigator's queue and case pages      casework/cases/urls.py
/notifications/   every person's notifications and email settings  casework/cases/notifications/urls.py
/fraud/           fraud alert import and captured patterns     casework/fraud/urls.py
/access/          access changes: employee links, manager inbox, notifications   casework/access/urls.py
/support/         support tickets: queue with SLA clocks, logging a message, auto-sent replies   casework/support/urls.py
/transactions/    transaction investigations: start, import, promoted rules   casework/transactions/urls.py
/releases/        release risk: releases posted by CI, the detective's reports   casework/releases/urls.py
/lifecycles/      every case type's declared states and moves, drawn   casework/cases/lifecycle/urls.py
/entities/<id>/   an entity across cases; /cases/<ref>/graph/, links, merge   casework/entities/urls.py
/evals/           evaluation runs over time (staff); "Add to evaluation suite"   agents/evals/urls.py
/cases/<ref>/ask/ "Ask the agent" on every case page              agents/chat/urls.py
/approvals/       what agents wait to do until a person approves it; the case page's panel   agents/approvals/urls.py
/cases/<ref>/report.pdf  the case report (PDF) on every case page   casework/cases/report/urls.py
/cases/<ref>/actions/    the case's actions (card block ...): live panel, confirm or fail by hand   casework/cases/actions/urls.py
/api/             REST API (OpenAPI at /api/schema/, Swagger at /api/docs/)
/api/webhooks/    outgoing webhook endpoints and their delivery logs (admins)   casework/outbox/api_urls.py
/api/actions/<event id>/confirmation   signed callback: an action was carried out (or failed)   casework/cases/actions/api_urls.py
/admin/           reference data and read-only audit entries
/cases/<ref>/who-looked/  who read a case (its leads, admins); /audit/access.csv the access log
                  per person or case (admins)   casework/cases/access_log_urls.py
/audit/key/       the public key that signs audit checkpoints, and the newest one   audit/urls.py
/oidc/            sign-in through the organisation's identity provider   casework/people/oidc.py
/scim/v2/         SCIM 2.0 provisioning by the identity provider   casework/people/scim_urls.py
/healthz /metrics operations                                     casework/ops/views.py
"""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularSwaggerSplitView

from casework.api_schema_view import SchemaView
from casework.cases.dashboard import views as dashboard_views
from casework.ops import views as ops_views
from casework.people.urls import auth_urlpatterns

api_urlpatterns = [
    path("", include("casework.cases.api_urls")),
    path("", include("casework.fraud.api_urls")),
    path("", include("casework.access.api_urls")),
    path("", include("casework.support.api_urls")),
    path("", include("casework.transactions.api_urls")),
    path("", include("casework.releases.api_urls")),
    path("", include("agents.chat.api_urls")),
    path("", include("agents.approvals.api_urls")),
    path("", include("casework.cases.tasks.api_urls")),
    path("", include("casework.cases.attachments.api_urls")),
    path("", include("casework.cases.report.api_urls")),
    path("", include("casework.cases.saved_views.api_urls")),
    path("", include("casework.outbox.api_urls")),
    path("", include("casework.cases.actions.api_urls")),
    path("", include("casework.entities.api_urls")),
    path("", include("casework.privacy.api_urls")),
    path("", include("casework.budgets.api_urls")),
    path("schema/", SchemaView.as_view(), name="schema"),
    # The split view serves Swagger UI's setup as a script URL: the CSP allows no inline script.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="swagger-ui"),
]

urlpatterns = [
    path("", dashboard_views.home, name="home"),
    *auth_urlpatterns,
    path("people/", include("casework.people.urls")),
    path("people/", include("casework.cases.teams_urls")),
    path("cases/", include("casework.cases.urls")),
    path("notifications/", include("casework.cases.notifications.urls")),
    path("saved-views/", include("casework.cases.saved_views.urls")),
    path("lifecycles/", include("casework.cases.lifecycle.urls")),
    path("fraud/", include("casework.fraud.urls")),
    path("access/", include("casework.access.urls")),
    path("support/", include("casework.support.urls")),
    path("transactions/", include("casework.transactions.urls")),
    path("releases/", include("casework.releases.urls")),
    path("cases/", include("agents.chat.urls")),
    path("cases/", include("agents.urls")),
    path("", include("agents.approvals.urls")),
    path("cases/", include("casework.cases.tasks.urls")),
    path("cases/", include("casework.cases.attachments.urls")),
    path("cases/", include("casework.cases.report.urls")),
    path("cases/", include("casework.cases.actions.urls")),
    path("cases/", include("casework.budgets.urls")),
    path("", include("casework.entities.urls")),
    path("evals/", include("agents.evals.urls")),
    path("api/", include(api_urlpatterns)),
    path("", include("casework.cases.access_log_urls")),
    path("audit/", include("audit.urls")),
    path("admin/", admin.site.urls),
    path("scim/v2/", include("casework.people.scim_urls")),
    path("healthz", ops_views.healthz, name="healthz"),
    path("metrics", ops_views.metrics, name="metrics"),
]

handler404 = "casework.api_errors.not_found"

admin.site.site_header = "Casework administration"
admin.site.site_title = "Casework admin"
