"""Casework settings.

Everything is read through django-environ from the process environment, or from `.env`
when present (see `.env.example`). Embedded defaults run the product on one machine with
nothing else installed: SQLite under var/ and a filesystem-broker Celery worker. Setting
DATABASE_URL / CELERY_BROKER_URL switches to PostgreSQL / Redis with no code change.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
if (BASE_DIR / ".env").exists():
    environ.Env.read_env(BASE_DIR / ".env")

# --- Paths -----------------------------------------------------------------------------
# var/ holds every file the running product writes: the SQLite database, the filesystem
# broker's queues, traces. It is never committed.
VAR_DIR = Path(env("VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

# --- Core ------------------------------------------------------------------------------
DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env("SECRET_KEY", default="")
if not SECRET_KEY and (VAR_DIR / "secret_key").is_file():
    # The key `make run` generated (bin/run exports it the same way), so that every
    # manage.py command (access_links signs links with it) agrees with the running server.
    SECRET_KEY = (VAR_DIR / "secret_key").read_text(encoding="utf-8").strip()
if not SECRET_KEY:
    if DEBUG:
        # Development-only fallback: never used when DEBUG is off.
        SECRET_KEY = "django-insecure-development-only-key"
    else:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set it in the environment or in .env "
            "(`make run` generates one under var/), or set DEBUG=true for development."
        )

# --- Encryption at rest (issue 42) ------------------------------------------------------
# Secrets (webhook endpoint secrets) and special-category fields (absence details) are stored
# encrypted with Fernet (casework/security/encryption.py). FIELD_ENCRYPTION_KEYS: Fernet keys
# (urlsafe base64 of 32 bytes, `manage.py rotate_field_keys --generate` prints one),
# comma-separated, newest first: the first encrypts, every one decrypts. To rotate, put a new
# key first, run `manage.py rotate_field_keys`, then drop the old key. `make run` keeps a key
# for the local server in var/field_encryption_key (development only).
FIELD_ENCRYPTION_KEYS = env.list("FIELD_ENCRYPTION_KEYS", default=[])
if not FIELD_ENCRYPTION_KEYS and (VAR_DIR / "field_encryption_key").is_file():
    FIELD_ENCRYPTION_KEYS = (VAR_DIR / "field_encryption_key").read_text(encoding="utf-8").split()
if not FIELD_ENCRYPTION_KEYS:
    if DEBUG:
        # Development-only fallback, derived from SECRET_KEY: never used when DEBUG is off.
        FIELD_ENCRYPTION_KEYS = [base64.urlsafe_b64encode(hashlib.sha256(
            b"casework field encryption, development only\n" + SECRET_KEY.encode()).digest()).decode()]
    else:
        raise ImproperlyConfigured(
            "FIELD_ENCRYPTION_KEYS is not set: give one Fernet key or more, newest first (`manage.py "
            "rotate_field_keys --generate` prints a new one), or set DEBUG=true for development.")
for _number, _key in enumerate(FIELD_ENCRYPTION_KEYS, start=1):
    try:
        if len(base64.urlsafe_b64decode(_key.encode())) != 32:
            raise ValueError
    except ValueError:
        # Never quote the value: it is a secret.
        raise ImproperlyConfigured(f"FIELD_ENCRYPTION_KEYS: key {_number} is not a Fernet key "
                                   "(urlsafe base64 of 32 bytes).") from None

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "django_filters",
    "rest_framework",
    "rest_framework.authtoken",  # kept for its migrations: 0001 of security moves its tokens
    "axes",
    "csp",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "audit",
    "casework.people",
    "casework.cases",
    # The case types, each registering itself (casework.cases.types.case_type_register) in this
    # order: the order the queue's filter, the demo and the dashboard list them in.
    "casework.fraud",
    "casework.support",
    "casework.access",
    "casework.transactions",
    "casework.releases",
    # Shared by every case type; after the case-type apps, so their tabs come last on the page.
    "casework.cases.tasks",
    "casework.cases.attachments",
    "casework.cases.notifications",
    "casework.cases.saved_views",
    "casework.entities",
    "casework.privacy",
    "casework.outbox",
    "casework.cases.actions",
    "casework.budgets",
    "casework.idempotency",
    "casework.ops",
    "casework.security",
    "agents",
    "agents.chat",
    "agents.approvals",
    "agents.evals",
]

MIDDLEWARE = [
    # The request's id (X-Request-ID) for its span and every log line written while it runs:
    # first, so inside the request's span (audit.tracing.instrument_django puts
    # OpenTelemetry's middleware before everything) and around all the others' log lines.
    "audit.context.CorrelationIdMiddleware",
    "casework.ops.metrics.RequestMetricsMiddleware",
    # A transient database error (a restart): a safe request runs again once, others get 503
    # with Retry-After; never a 500 (casework/db_transient.py). Outside all but the metrics.
    "casework.db_transient.TransientDatabaseErrorMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Every read of a case, an entity or an export on record, written after the response is
    # sent (audit/access.py).
    "audit.access.AccessLogMiddleware",
    # A hidden case's reference quoted in free text (an agent's prose, an audit entry) is
    # replaced before the response leaves (casework/cases/redaction.py).
    "casework.cases.redaction.ReferenceRedactionMiddleware",
    "casework.people.middleware.LoginRequiredMiddleware",
    "casework.security.middleware.PermissionsPolicyMiddleware",
    "casework.security.middleware.QueryStringLimitMiddleware",
    "casework.security.middleware.ApiJsonTextMiddleware",
    "csp.middleware.CSPMiddleware",
    # Asks the identity provider again, silently, once a sign-in through it is older than
    # OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS (does nothing for local sign-ins, or with OIDC off).
    # After CSPMiddleware: it adds the provider to form-action, where signing out goes.
    "casework.people.oidc.OIDCSessionRefresh",
    # Last, as django-axes asks: it turns a locked-out sign-in into its lockout response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "casework.urls"
WSGI_APPLICATION = "casework.wsgi.application"
ASGI_APPLICATION = "casework.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "casework.people.context_processors.roles",
            ],
        },
    },
]

# --- Database --------------------------------------------------------------------------
# SQLite by default; DATABASE_URL=postgres://user@host:5432/name for PostgreSQL (psycopg 3).
DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'casework.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A web server and a threaded worker share one file: WAL lets readers run beside the
    # writer, IMMEDIATE takes the write lock at BEGIN (no deadlock on lock upgrade), and the
    # busy timeout makes a second writer wait instead of failing.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # Django's SQLite backend whose flush gets past the audit trail's append-only trigger as
    # PostgreSQL's TRUNCATE does (casework/sqlite/base.py); vendor is still "sqlite".
    DATABASES["default"]["ENGINE"] = "casework.sqlite"
    # Tests use a file (not :memory:) so that threads in race tests share the database; one
    # per test process, so that two test runs on one machine do not collide.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-{os.getpid()}.sqlite3")}
else:
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    # Values sent beside the statement (the extended protocol) rather than quoted into its text
    # by psycopg: a run writes kilobytes of JSON per step (calls, audit entries, the run's
    # state), whose quoting in Python cost a worker about a tenth of its CPU. In five interleaved
    # pairs of the fraud throughput bench, 305 LLM calls/s against 278, worker CPU per alert
    # 18.5 ms against 20.9 (bench/README.md, runtime_throughput). Nothing is prepared.
    if env.bool("DB_SERVER_SIDE_BINDING", default=True):
        DATABASES["default"].setdefault("OPTIONS", {})["server_side_binding"] = True

# In a Celery worker, a PostgreSQL statement its connection has run this many times is prepared
# (psycopg's prepare_threshold): parsed and planned once per connection, then only bound and
# run. A worker runs the same few dozen statements for every run; PostgreSQL spent about a
# quarter less CPU per fraud alert (bench/README.md, runtime_throughput). The web's
# connections are not prepared (Django's default): a page's statements vary with what is asked.
# Statements whose best plan depends on their values are never prepared (casework.db_unprepared).
# `off` behind a pooler in transaction mode that does not track prepared statements
# (PgBouncer before 1.21, or without max_prepared_statements).
_prepare_threshold = env.str("WORKER_DB_PREPARE_THRESHOLD", default="1").strip().lower()
if _prepare_threshold in ("", "off", "none"):
    WORKER_DB_PREPARE_THRESHOLD = None
elif _prepare_threshold.isdigit():
    WORKER_DB_PREPARE_THRESHOLD = int(_prepare_threshold)
else:
    raise ImproperlyConfigured(
        f"WORKER_DB_PREPARE_THRESHOLD must be a whole number of runs (0 or more) or off, not {_prepare_threshold!r}.")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Auth ------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Sign-in lockout (django-axes): AXES_FAILURE_LIMIT failures for one username from one IP lock
# that pair out for AXES_COOLOFF_HOURS; an admin unlocks by deleting the "Access attempts"
# row in the admin (or `manage.py axes_reset`). Each lockout is audited (casework/security).
AUTHENTICATION_BACKENDS = [
    "casework.security.backends.LockoutBackend",
    "casework.security.backends.LocalPasswordBackend",
    # Answers only the identity provider's callback (casework/people/oidc.py).
    "casework.people.oidc.OIDCBackend",
]
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = env.float("AXES_COOLOFF_HOURS", default=1.0)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
if AXES_FAILURE_LIMIT < 1 or AXES_COOLOFF_TIME <= 0:
    raise ImproperlyConfigured("AXES_FAILURE_LIMIT must be at least 1 and AXES_COOLOFF_HOURS above 0.")
# API tokens (casework/security/tokens.py): hashed at rest, expiring after API_TOKEN_DAYS
# (0: never), revocable one by one in the admin.
API_TOKEN_DAYS = env.int("API_TOKEN_DAYS", default=90)
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
# Local password sign-in (the login form and the admin's) only for these usernames when set:
# the break-glass admins once everyone else signs in through the identity provider. Empty: anyone.
LOCAL_LOGIN_USERS = env.list("LOCAL_LOGIN_USERS", default=[])

# --- Sign-in through the organisation's identity provider (casework/people/oidc.py) ---------
# OpenID Connect, authorization code flow with PKCE (mozilla-django-oidc). Off unless
# OIDC_RP_CLIENT_ID is set. OIDC_ISSUER (or OIDC_DISCOVERY_URL) names the provider; its
# endpoints come from its discovery document, read at first use and kept for the process.
# Any OIDC_OP_*_ENDPOINT set here wins over discovery.
OIDC_RP_CLIENT_ID = env("OIDC_RP_CLIENT_ID", default="")
OIDC_RP_CLIENT_SECRET = env("OIDC_RP_CLIENT_SECRET", default="")
OIDC_ISSUER = env("OIDC_ISSUER", default="").rstrip("/")
OIDC_DISCOVERY_URL = env("OIDC_DISCOVERY_URL", default="")
OIDC_PROVIDER_NAME = env("OIDC_PROVIDER_NAME", default="your organisation's account")
OIDC_RP_SCOPES = env("OIDC_RP_SCOPES", default="openid email profile")
OIDC_RP_SIGN_ALGO = env("OIDC_RP_SIGN_ALGO", default="RS256")
OIDC_OP_AUTHORIZATION_ENDPOINT = env("OIDC_OP_AUTHORIZATION_ENDPOINT", default="")
OIDC_OP_TOKEN_ENDPOINT = env("OIDC_OP_TOKEN_ENDPOINT", default="")
OIDC_OP_USER_ENDPOINT = env("OIDC_OP_USER_ENDPOINT", default="")
OIDC_OP_JWKS_ENDPOINT = env("OIDC_OP_JWKS_ENDPOINT", default="")
OIDC_OP_END_SESSION_ENDPOINT = env("OIDC_OP_END_SESSION_ENDPOINT", default="")
# The client authenticates to the token endpoint with HTTP Basic (client_secret_basic) instead
# of form fields (client_secret_post).
OIDC_TOKEN_USE_BASIC_AUTH = env.bool("OIDC_TOKEN_USE_BASIC_AUTH", default=False)
# The claim that lists a person's groups, and which group gives which role:
# "casework-investigators=investigator,casework-managers=manager". A person in no mapped group
# is refused; roles are set again from the groups at every sign-in and session refresh.
OIDC_GROUPS_CLAIM = env("OIDC_GROUPS_CLAIM", default="groups")
OIDC_USERNAME_CLAIM = env("OIDC_USERNAME_CLAIM", default="preferred_username")
OIDC_GROUP_ROLES = env.dict("OIDC_GROUP_ROLES", default={})
# How long a sign-in stands before the next page load silently asks the provider again
# (prompt=none), which re-reads the person's groups: someone removed from every mapped group
# loses access at their first request after this.
OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = env.int("OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS", default=300)
# Seconds of clock difference with the provider accepted on an ID token's exp/iat.
OIDC_CLOCK_SKEW_SECONDS = env.int("OIDC_CLOCK_SKEW_SECONDS", default=60)
OIDC_TIMEOUT = env.float("OIDC_TIMEOUT_SECONDS", default=10.0)
OIDC_USE_PKCE = True
OIDC_USE_NONCE = True
OIDC_STORE_ID_TOKEN = True  # the id_token_hint of RP-initiated logout
OIDC_CREATE_USER = True
OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_authentication_callback"
LOGIN_REDIRECT_URL_FAILURE = "login"
OIDC_OP_LOGOUT_URL_METHOD = "casework.people.oidc.provider_logout_url"
if OIDC_RP_CLIENT_ID and not (OIDC_ISSUER or OIDC_DISCOVERY_URL or OIDC_OP_AUTHORIZATION_ENDPOINT):
    raise ImproperlyConfigured("OIDC_RP_CLIENT_ID is set: set OIDC_ISSUER (or OIDC_DISCOVERY_URL) too.")
if OIDC_RP_CLIENT_ID and not OIDC_GROUP_ROLES:
    raise ImproperlyConfigured("OIDC_RP_CLIENT_ID is set: set OIDC_GROUP_ROLES too (group=role,...); without it "
                               "nobody who signs in through the provider gets a role.")
if OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS < 30:
    raise ImproperlyConfigured("OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS must be at least 30.")
_unknown_roles = sorted(set(OIDC_GROUP_ROLES.values()) - {"investigator", "manager", "release_manager", "admin",
                                                    "data_protection"})
if _unknown_roles:
    raise ImproperlyConfigured(f"OIDC_GROUP_ROLES maps to unknown roles {_unknown_roles}: use investigator, "
                               "manager, release_manager, admin or data_protection.")

# --- SCIM 2.0 provisioning (casework/people/scim.py, /scim/v2/) ----------------------------
# The identity provider creates, updates and deactivates people with
# `Authorization: Bearer <SCIM_TOKEN>`. Empty: /scim/v2/ answers 404.
SCIM_TOKEN = env("SCIM_TOKEN", default="")
if SCIM_TOKEN and len(SCIM_TOKEN) < 32:
    raise ImproperlyConfigured("SCIM_TOKEN must be at least 32 characters (e.g. python -c 'import secrets; "
                               "print(secrets.token_urlsafe(32))').")

# --- Security --------------------------------------------------------------------------
# HTTPS=true in production turns on secure cookies, HSTS and the HTTPS redirect, which
# `manage.py check --deploy` asks for. Off by default because `make run` serves plain HTTP
# on 127.0.0.1 (development-only default).
HTTPS = env.bool("HTTPS", default=False)
SECURE_SSL_REDIRECT = HTTPS
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = HTTPS
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if HTTPS else None
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
# No page uses these browser features; a script injected into one cannot either.
# A longer query string is a 400 naming its longest parameter (casework.security.middleware).
QUERY_STRING_MAX_BYTES = env.int("QUERY_STRING_MAX_BYTES", default=16_384)
PERMISSIONS_POLICY = env("PERMISSIONS_POLICY", default=(
    "camera=(), microphone=(), geolocation=(), payment=(), usb=(), interest-cohort=()"))
# Content-Security-Policy (django-csp): scripts only from this site, never inline (page
# behaviours live in static/js/; Swagger UI loads its setup from a URL). Styles may be inline:
# htmx adds its indicator style and templates use style attributes. CSP_REPORT_ONLY=true
# sends the same policy as Content-Security-Policy-Report-Only, to try a change safely.
_CSP = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}
if env.bool("CSP_REPORT_ONLY", default=False):
    CONTENT_SECURITY_POLICY_REPORT_ONLY = _CSP
else:
    CONTENT_SECURITY_POLICY = _CSP
# /metrics answers only `Authorization: Bearer <METRICS_TOKEN>` when this is set (production).
METRICS_TOKEN = env("METRICS_TOKEN", default="")
# A Celery worker's own Prometheus endpoint (casework/ops/worker_metrics.py), for workers on
# machines where no web server merges their samples: empty for none. The same bearer token.
# Loopback by default, so that setting a port alone never opens one to the network.
_worker_metrics_port = env("WORKER_METRICS_PORT", default="").strip()
if _worker_metrics_port and not (_worker_metrics_port.isdecimal() and 1 <= int(_worker_metrics_port) <= 65535):
    raise ImproperlyConfigured(f"WORKER_METRICS_PORT is a port number (1 to 65535) or empty, not "
                               f"{_worker_metrics_port!r}.")
WORKER_METRICS_PORT = int(_worker_metrics_port) if _worker_metrics_port else None
WORKER_METRICS_ADDR = env("WORKER_METRICS_ADDR", default="127.0.0.1").strip()
if not WORKER_METRICS_ADDR:
    raise ImproperlyConfigured("WORKER_METRICS_ADDR is the address the worker's metrics endpoint listens on, "
                               "e.g. 127.0.0.1 or 0.0.0.0.")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]

# --- I18N ------------------------------------------------------------------------------
LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Static files ----------------------------------------------------------------------
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns when it is missing
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# --- Case attachments (casework/cases/attachments) -------------------------------------
# Evidence files go through STORAGES["default"]: FileSystemStorage under MEDIA_ROOT (var/media/,
# never committed) on the embedded default; production may point STORAGES["default"] at another
# backend (S3 ...). No URL serves MEDIA_ROOT: a file is read only through the attachment's
# download view, which checks that the person may see the case. A larger file is refused (413),
# and so is any extension outside ATTACHMENT_EXTENSIONS (casework/cases/attachments/filetypes.py).
MEDIA_ROOT = Path(env("MEDIA_ROOT", default=str(VAR_DIR / "media")))
MEDIA_ROOT.mkdir(parents=True, exist_ok=True)
# No route serves MEDIA_URL (and none may: add no static(MEDIA_URL, ...) to urls.py); Django's
# test live server alone maps it, for itself.
MEDIA_URL = "/media/"
ATTACHMENT_MAX_BYTES = env.int("ATTACHMENT_MAX_BYTES", default=10 * 1024 * 1024)
ATTACHMENT_EXTENSIONS = env.list("ATTACHMENT_EXTENSIONS", default=[
    ".pdf", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".txt", ".csv", ".json", ".eml", ".log",
    ".docx", ".xlsx", ".odt", ".ods"])
if ATTACHMENT_MAX_BYTES < 1:
    raise ImproperlyConfigured("ATTACHMENT_MAX_BYTES must be at least 1.")
# WhiteNoise serves static/ straight from the finders, so no collectstatic step is needed.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# --- Celery ----------------------------------------------------------------------------
# Default: kombu's filesystem transport under var/celery (one machine, no server).
# CELERY_BROKER_URL=redis://127.0.0.1:6379/0 (or amqp://...) for workers on many machines.
# (kombu ignores the host of a filesystem URL; naming one keeps it from warning about it)
CELERY_BROKER_URL = env("CELERY_BROKER_URL", default="filesystem://localhost//")
CELERY_BROKER_DIR = VAR_DIR / "celery"
if CELERY_BROKER_URL.startswith("filesystem://"):
    for sub in ("queue", "processed", "control"):
        (CELERY_BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_BROKER_DIR / "queue"),
        "data_folder_out": str(CELERY_BROKER_DIR / "queue"),
        "processed_folder": str(CELERY_BROKER_DIR / "processed"),
        # kombu's default is ./control in the current directory; keep it under var/ too.
        "control_folder": str(CELERY_BROKER_DIR / "control"),
        "store_processed": False,
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
# Four queues, all consumed by every worker started without -Q (Celery's default when
# task_queues is set), polled in turn: the periodic sweeps ("ops") and runs re-sent after a
# lost message or a dead worker ("resume") are not stuck behind a backlog of new runs in
# "celery" (bench/README.md, kill test on the embedded defaults).
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = {"celery": {}, "resume": {}, "ops": {}, "chat": {}}
CELERY_TASK_ROUTES = {
    # Someone is waiting for the answer in the page: not behind a backlog of runs either.
    "agents.chat.tasks.chat_answer": {"queue": "chat"},
    "agents.tasks.resume_stale_runs": {"queue": "ops"},
    "agents.tasks.approvals_expire": {"queue": "ops"},
    "casework.budgets.tasks.budget_holds_release": {"queue": "ops"},
    "agents.chat.tasks.chat_resend_lost": {"queue": "ops"},
    "audit.tasks.audit_sequence_pending": {"queue": "ops"},
    "casework.access.tasks.access_send_reminders": {"queue": "ops"},
    "casework.cases.notifications.tasks.cases_sla_check": {"queue": "ops"},
    "casework.outbox.tasks.outbox_deliver_due": {"queue": "ops"},
    "casework.outbox.tasks.outbox_email_send_due": {"queue": "ops"},
    "casework.transactions.monitoring.tasks.monitoring_evaluate_pending": {"queue": "ops"},
    "casework.transactions.monitoring.tasks.aggregates_prune": {"queue": "ops"},
    "casework.transactions.monitoring.tasks.aggregates_ensure": {"queue": "ops"},
    "casework.idempotency.tasks.idempotency_purge": {"queue": "ops"},
}
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"

# --- REST API --------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first: DRF answers 401 (not 403) from the first class's authenticate header.
        "casework.security.tokens.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # A JSON body must be an object (an array, a null, a bare value: 400 naming it); forms and
    # multipart as DRF's defaults.
    "DEFAULT_PARSER_CLASSES": [
        "casework.api_errors.JSONObjectParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    # ?page_size= up to 100; counts capped at 10,000 so that they stay cheap (casework/cases/pagination.py).
    "DEFAULT_PAGINATION_CLASS": "casework.cases.pagination.ApiPagination",
    "PAGE_SIZE": 25,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "casework.api_errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # Over the rate: 429 with Retry-After. Counted in the cache (CACHE_URL), per IP for
    # anonymous callers, per user for tokens and sessions, per IP on the signed-link endpoint.
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env("API_THROTTLE_ANON", default="60/min"),
        "user": env("API_THROTTLE_USER", default="1200/min"),
        "signed_link": env("API_THROTTLE_SIGNED_LINK", default="20/min"),
    },
}
# Throttle counters. The default is per process; CACHE_URL=redis://... shares them between
# gunicorn workers and machines.
CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://")}
if CACHES["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache":
    # The same, with one client per connection pool instead of one per cache call (casework/redis_cache.py).
    CACHES["default"]["BACKEND"] = "casework.redis_cache.RedisCache"
# What every page's navigation reads (pinned views, unread count, teams, investigators;
# casework/cases/navigation.py). A change made in one process (a Celery worker notifying
# someone) must reach the pages every other process renders, so this cache is shared: the
# CACHE_URL cache when it is (Redis, Memcached, a database), else files under VAR_DIR (one
# machine, as with the embedded default's web server and worker). A per-process locmem would
# show a stale count.
if CACHES["default"]["BACKEND"].endswith(("LocMemCache", "DummyCache")):
    # Django's file cache culls a third of its files, at random, once it holds MAX_ENTRIES
    # (default 300): with a few entries per person, one person's change would evict others'.
    CACHES["nav"] = {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                     "LOCATION": str(VAR_DIR / "cache" / "nav"), "OPTIONS": {"MAX_ENTRIES": 100_000}}
else:
    CACHES["nav"] = {**CACHES["default"]}
SPECTACULAR_SETTINGS = {
    "TITLE": "Casework API",
    "DESCRIPTION": "Create cases, read agent results and record decisions.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI's assets come from drf-spectacular-sidecar, not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Every operation's error statuses and body, `security: []` on public ones (casework/api_schema.py).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "casework.api_schema.document_errors",
        # The outgoing webhooks' event catalogue as components (casework/outbox/catalogue.py).
        "casework.outbox.catalogue.add_event_components",
    ],
    # Several case types have status/priority fields; name the shared enums once.
    "ENUM_NAME_OVERRIDES": {
        "CaseStatusEnum": "casework.cases.models.Case.Status",
        "CasePriorityEnum": "casework.cases.models.Case.Priority",
        "RuleActionEnum": "casework.transactions.monitoring.models.RuleVersion.Action",
        "RuleModeEnum": "casework.transactions.monitoring.models.RuleVersion.Mode",
        # Two "kind" choice sets met in the merge of issues 46 and 47: each named for its model.
        "ValueListKindEnum": "casework.transactions.lists.models.ValueList.Kind",
        "RunPauseKindEnum": "agents.models.RunPause.Kind",
    },
}

# --- Email -----------------------------------------------------------------------------
# Console backend by default; EMAIL_URL=smtp://user:pass@host:587 (django-environ) for SMTP.
EMAIL_CONFIG = env.email_url("EMAIL_URL", default="consolemail://")
vars().update(EMAIL_CONFIG)
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", default="casework@localhost")
# Seconds one SMTP attempt may take; the Celery task retries a failed one (30 s, 2 min, 10 min).
EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", default=10)

# --- Case deadlines (casework/cases/sla.py) ---------------------------------------------
# Hours from a case's creation to its due_at, per priority for every type, with per-type
# overrides as type:priority=hours (fractions allowed), e.g.
# CASE_SLA=critical=4,high=24,medium=72,low=168,fraud_alert:critical=2
# A priority change recomputes due_at from the creation time. The beat task warns the
# assignee CASE_SLA_WARN_HOURS before the deadline and records a breach in the audit trail.
# A type named here is checked against the registered types once the apps are ready (the
# system check casework.cases.checks.case_sla_check): the types register themselves later.
def _case_sla(value: str) -> dict[str, dict[str, float]]:
    priorities = ("critical", "high", "medium", "low")
    sla: dict[str, dict[str, float]] = {"*": {}}
    for part in filter(None, (p.strip() for p in value.split(","))):
        try:
            key, hours_text = part.split("=")
            case_type, _, priority = key.strip().rpartition(":")
            hours = float(hours_text)
        except ValueError:
            raise ImproperlyConfigured(f"CASE_SLA: {part!r} is not [type:]priority=hours.") from None
        if priority not in priorities or not hours > 0:
            raise ImproperlyConfigured(f"CASE_SLA: {part!r} names an unknown priority, or hours <= 0.")
        sla.setdefault(case_type or "*", {})[priority] = hours
    if set(sla["*"]) != set(priorities):
        raise ImproperlyConfigured("CASE_SLA must give hours for critical, high, medium and low.")
    return sla


CASE_SLA = _case_sla(env("CASE_SLA", default=(
    "critical=4,high=24,medium=72,low=168,fraud_alert:critical=2,fraud_alert:high=8,"
    "support_ticket:critical=1,support_ticket:high=8")))
CASE_SLA_WARN_HOURS = env.float("CASE_SLA_WARN_HOURS", default=2.0)
CASE_SLA_CHECK_MINUTES = env.int("CASE_SLA_CHECK_MINUTES", default=5)
if CASE_SLA_WARN_HOURS < 0 or CASE_SLA_CHECK_MINUTES < 1:
    raise ImproperlyConfigured("CASE_SLA_WARN_HOURS must be >= 0 and CASE_SLA_CHECK_MINUTES at least 1.")

# --- Personal data: retention (casework/privacy) ----------------------------------------
# How long each case type keeps its personal data, and from which moment: `closed` (the case's
# closed_at) or `decided` (its final decision), as type=days@moment, e.g.
# RETENTION=support_ticket=730@closed,access_change=183@decided
# What "its personal data" is each type registers (casework.cases.types.Retention); the case,
# its decision, outcome and reason and the counts stay. A type left out keeps its data (no
# policy). Defaults (README "Personal data"): support tickets 2 years after close (GDPR
# Art. 5(1)(e): no longer than needed to answer the customer and handle a complaint); absence
# details of access reviews 6 months after the decision (special-category health data); fraud
# alerts and transaction investigations 5 years after close (AML record keeping, EU AMLD
# Art. 40); release risk 2 years after the decision (little personal data: who committed).
# Types named here are checked against the registered ones once the apps are ready
# (casework.privacy.checks). The beat task runs every RETENTION_CHECK_HOURS, RETENTION_BATCH
# cases at a time.
def _retention(value: str) -> dict[str, dict]:
    policies: dict[str, dict] = {}
    for part in filter(None, (p.strip() for p in value.split(","))):
        try:
            case_type, rule = (x.strip() for x in part.split("="))
            days_text, moment = (x.strip() for x in rule.split("@"))
            days = int(days_text)
        except ValueError:
            raise ImproperlyConfigured(f"RETENTION: {part!r} is not type=days@moment.") from None
        if not case_type or days < 1 or moment not in ("closed", "decided"):
            raise ImproperlyConfigured(f"RETENTION: {part!r}: days must be at least 1 and the moment "
                                       "`closed` or `decided`.")
        if case_type in policies:
            raise ImproperlyConfigured(f"RETENTION: {case_type!r} is given twice.")
        policies[case_type] = {"days": days, "from": moment}
    return policies


RETENTION = _retention(env("RETENTION", default=(
    "support_ticket=730@closed,access_change=183@decided,fraud_alert=1826@closed,"
    "transaction_investigation=1826@closed,release_risk=730@decided")))
RETENTION_CHECK_HOURS = env.float("RETENTION_CHECK_HOURS", default=24.0)
RETENTION_BATCH = env.int("RETENTION_BATCH", default=200)
if RETENTION_CHECK_HOURS <= 0 or RETENTION_BATCH < 1:
    raise ImproperlyConfigured("RETENTION_CHECK_HOURS must be above 0 and RETENTION_BATCH at least 1.")
# Erasure of a data subject (casework/privacy/erasure.py): a request for more than one subject,
# or for a subject named in more than ERASURE_FOUR_EYES_CASES cases, waits for a second person's
# approval before it runs; it runs ERASURE_BATCH cases per transaction, keeping its place.
ERASURE_FOUR_EYES_CASES = env.int("ERASURE_FOUR_EYES_CASES", default=20)
ERASURE_BATCH = env.int("ERASURE_BATCH", default=50)
# A request approved or running whose run has committed no step for ERASURE_STALE_AFTER_SECONDS
# (its worker killed, its message lost) is sent again by a beat task every ERASURE_SWEEP_SECONDS;
# it continues at its cursor. Longer than a batch ever takes.
ERASURE_STALE_AFTER_SECONDS = env.int("ERASURE_STALE_AFTER_SECONDS", default=900)
ERASURE_SWEEP_SECONDS = env.int("ERASURE_SWEEP_SECONDS", default=300)
if ERASURE_FOUR_EYES_CASES < 0 or ERASURE_BATCH < 1:
    raise ImproperlyConfigured("ERASURE_FOUR_EYES_CASES must be at least 0 and ERASURE_BATCH at least 1.")
if ERASURE_STALE_AFTER_SECONDS < 60 or ERASURE_SWEEP_SECONDS < 10:
    raise ImproperlyConfigured("ERASURE_STALE_AFTER_SECONDS must be at least 60 and ERASURE_SWEEP_SECONDS at least 10.")

# --- Access changes (casework/access) ---------------------------------------------------
# The employee's answer link works once and expires after ACCESS_LINK_MAX_AGE_DAYS. A request
# nobody answered gets a reminder after ACCESS_REMINDER_DAYS and is escalated to the
# investigator after ACCESS_ESCALATION_DAYS (fractions allowed: 0.5 is twelve hours).
# SITE_URL is how links in emails start.
SITE_URL = env("SITE_URL", default="http://127.0.0.1:8000")
ACCESS_LINK_MAX_AGE_DAYS = env.int("ACCESS_LINK_MAX_AGE_DAYS", default=7)
ACCESS_REMINDER_DAYS = env.float("ACCESS_REMINDER_DAYS", default=2.0)
ACCESS_ESCALATION_DAYS = env.float("ACCESS_ESCALATION_DAYS", default=4.0)
ACCESS_REMINDER_CHECK_MINUTES = env.int("ACCESS_REMINDER_CHECK_MINUTES", default=30)
# Seconds before the 2nd and 3rd attempts of a failed access step (Celery countdowns; the
# run that makes the attempt is not claimed earlier), so that a blip is not Manual Intervention.
ACCESS_RETRY_COUNTDOWNS = [float(s) for s in env.list("ACCESS_RETRY_COUNTDOWNS", default=["30", "120"])]
if not 0 < ACCESS_REMINDER_DAYS < ACCESS_ESCALATION_DAYS:
    raise ImproperlyConfigured("ACCESS_REMINDER_DAYS must be above 0 and below ACCESS_ESCALATION_DAYS.")
if ACCESS_LINK_MAX_AGE_DAYS < 1 or ACCESS_REMINDER_CHECK_MINUTES < 1:
    raise ImproperlyConfigured("ACCESS_LINK_MAX_AGE_DAYS and ACCESS_REMINDER_CHECK_MINUTES must be at least 1.")

# --- Support tickets (casework/support) -------------------------------------------------
# SUPPORT_AUTO_SEND=true lets the system send an `auto_respond` triage's reply itself (listed
# for spot checks); otherwise the reply waits for one click. The SLA clock per plan: minutes
# to the first response and hours to resolution, e.g.
# SUPPORT_SLA=enterprise=60/8,pro=240/24,free=1440/72
SUPPORT_AUTO_SEND = env.bool("SUPPORT_AUTO_SEND", default=False)


def _support_sla(value: str) -> dict:
    sla = {}
    for part in filter(None, (p.strip() for p in value.split(","))):
        try:
            plan, targets = part.split("=")
            first, resolve = targets.split("/")
            sla[plan.strip()] = {"first_response_minutes": int(first), "resolution_hours": int(resolve)}
        except ValueError:
            raise ImproperlyConfigured(f"SUPPORT_SLA: {part!r} is not plan=minutes/hours.") from None
    if set(sla) != {"free", "pro", "enterprise"}:
        raise ImproperlyConfigured("SUPPORT_SLA must give targets for free, pro and enterprise.")
    return sla


SUPPORT_SLA = _support_sla(env("SUPPORT_SLA", default="enterprise=60/8,pro=240/24,free=1440/72"))
# Replies are emailed to customers with an address, from SUPPORT_EMAIL_FROM (default
# DEFAULT_FROM_EMAIL), with "[TKT-...]" in the subject and threading headers.
SUPPORT_EMAIL_FROM = env("SUPPORT_EMAIL_FROM", default=DEFAULT_FROM_EMAIL)
# Inbound email (casework/support/inbound.py). An answer to a solved ticket's thread within
# SUPPORT_REOPEN_DAYS reopens it; later, it opens a new ticket that follows the old one. Mail
# from an address no customer has: "open" (a new customer and ticket) or "hold" (kept for a
# person, at /admin/support/inboundemail/).
SUPPORT_REOPEN_DAYS = env.float("SUPPORT_REOPEN_DAYS", default=7)
SUPPORT_UNKNOWN_SENDER = env("SUPPORT_UNKNOWN_SENDER", default="hold")
if SUPPORT_UNKNOWN_SENDER not in ("open", "hold") or SUPPORT_REOPEN_DAYS < 0:
    raise ImproperlyConfigured("SUPPORT_UNKNOWN_SENDER is open or hold; SUPPORT_REOPEN_DAYS is 0 or more.")
# How each provider proves a post is its own (django-anymail): HTTP basic auth for Postmark,
# SendGrid, Amazon SES (SNS) and raw MIME posts (INBOUND_EMAIL_WEBHOOK_SECRET=user:password,
# several comma-separated during a change), Mailgun's HMAC signature
# (MAILGUN_WEBHOOK_SIGNING_KEY). A provider with nothing configured refuses every post.
ANYMAIL = {
    "WEBHOOK_SECRET": env.list("INBOUND_EMAIL_WEBHOOK_SECRET", default=[]),
    "MAILGUN_WEBHOOK_SIGNING_KEY": env("MAILGUN_WEBHOOK_SIGNING_KEY", default=""),
    # SNS subscription confirmations are answered by hand (no outbound call from a webhook).
    "AMAZON_SES_AUTO_CONFIRM_SNS_SUBSCRIPTIONS": False,
}

# Escalation groups (casework/support/groups.py): an escalated ticket goes to the group of its
# category (a security concern: security), e.g.
# SUPPORT_GROUP_FOR_CATEGORY=billing=billing,technical=technical,general=general,security=security
# and, within the group, to a member by SUPPORT_GROUP_ASSIGNMENT: round_robin (the next member
# by username after the last one given a ticket) or least_loaded (fewest open cases assigned).
SUPPORT_GROUP_ASSIGNMENT = env("SUPPORT_GROUP_ASSIGNMENT", default="round_robin")
if SUPPORT_GROUP_ASSIGNMENT not in ("round_robin", "least_loaded"):
    raise ImproperlyConfigured(f"SUPPORT_GROUP_ASSIGNMENT={SUPPORT_GROUP_ASSIGNMENT!r}: use round_robin or least_loaded.")
SUPPORT_GROUP_FOR_CATEGORY = {"billing": "billing", "technical": "technical", "general": "general",
                              "security": "security",
                              **env.dict("SUPPORT_GROUP_FOR_CATEGORY", default={})}
if not set(SUPPORT_GROUP_FOR_CATEGORY.values()) <= {"billing", "technical", "general", "security"}:
    raise ImproperlyConfigured("SUPPORT_GROUP_FOR_CATEGORY: each category maps to billing, technical, general "
                               "or security.")
# A ticket pending on the customer (SLA clock paused) with no answer for this many days is
# closed for inactivity by the scan below (the case is left for a person to confirm).
SUPPORT_AUTO_CLOSE_DAYS = env.int("SUPPORT_AUTO_CLOSE_DAYS", default=7)
SUPPORT_AUTO_CLOSE_CHECK_MINUTES = env.int("SUPPORT_AUTO_CLOSE_CHECK_MINUTES", default=60)
# "Did this answer your question?": a reply's signed link works this many days after the reply.
SUPPORT_FEEDBACK_LINK_DAYS = env.int("SUPPORT_FEEDBACK_LINK_DAYS", default=30)
if min(SUPPORT_AUTO_CLOSE_DAYS, SUPPORT_AUTO_CLOSE_CHECK_MINUTES, SUPPORT_FEEDBACK_LINK_DAYS) < 1:
    raise ImproperlyConfigured("SUPPORT_AUTO_CLOSE_DAYS, SUPPORT_AUTO_CLOSE_CHECK_MINUTES and "
                               "SUPPORT_FEEDBACK_LINK_DAYS must be at least 1.")

# --- Reads that must not grow with history (DESIGN.md "Cost per case stays flat") -------
# FRAUD_LOOKALIKE_CELL_CAP: a fraud alert's look-alike search reads at most this many decided
# alerts of each group (confirmed / cleared) per nearby grid cell, newest first
# (casework/fraud/similarity.py). CASE_TIMELINE_PAGE: timeline entries per page, newest first.
# SUPPORT_MATCH_MAX_TICKETS: the most active tickets of a customer the support matcher
# considers for a new email, most recent activity first. TXN_SIMILARITY_CANDIDATES: the most
# past investigations (in the neighbouring buckets, newest first) a similarity query scores.
FRAUD_LOOKALIKE_CELL_CAP = env.int("FRAUD_LOOKALIKE_CELL_CAP", default=12)
CASE_TIMELINE_PAGE = env.int("CASE_TIMELINE_PAGE", default=50)
SUPPORT_MATCH_MAX_TICKETS = env.int("SUPPORT_MATCH_MAX_TICKETS", default=20)
TXN_SIMILARITY_CANDIDATES = env.int("TXN_SIMILARITY_CANDIDATES", default=250)
for _name in ("FRAUD_LOOKALIKE_CELL_CAP", "CASE_TIMELINE_PAGE", "SUPPORT_MATCH_MAX_TICKETS",
              "TXN_SIMILARITY_CANDIDATES"):
    if globals()[_name] < 1:
        raise ImproperlyConfigured(f"{_name} must be at least 1.")

# --- Transaction investigations (seed 003: casework/transactions/agents/pipeline.py) -----------
# The planner's step limit (planner decisions), each tool's timeout, the whole
# investigation's timeout (checked between steps; a timed-out one keeps its findings and can
# be resumed) and the planner LLM call's own timeout (a timeout falls back to the fixed order).
TXN_MAX_STEPS = env.int("TXN_MAX_STEPS", default=20)
TXN_TOOL_TIMEOUT_SECONDS = env.float("TXN_TOOL_TIMEOUT_SECONDS", default=10.0)
TXN_INVESTIGATION_TIMEOUT_SECONDS = env.float("TXN_INVESTIGATION_TIMEOUT_SECONDS", default=120.0)
TXN_PLANNER_TIMEOUT_SECONDS = env.float("TXN_PLANNER_TIMEOUT_SECONDS", default=10.0)
if TXN_MAX_STEPS < 1 or min(TXN_TOOL_TIMEOUT_SECONDS, TXN_INVESTIGATION_TIMEOUT_SECONDS,
                            TXN_PLANNER_TIMEOUT_SECONDS) <= 0:
    raise ImproperlyConfigured("TXN_MAX_STEPS must be at least 1 and the TXN_*_TIMEOUT_SECONDS positive.")

# Transaction monitoring (casework/transactions/monitoring): amounts are converted to
# SETTLEMENT_CURRENCY with the rates stored in the database; live rule hits on one card
# within TXN_HIT_JOIN_MINUTES join that card's open case instead of opening another.
SETTLEMENT_CURRENCY = env("SETTLEMENT_CURRENCY", default="EUR").upper()
TXN_HIT_JOIN_MINUTES = env.int("TXN_HIT_JOIN_MINUTES", default=24 * 60)
TXN_INGEST_MAX_BATCH = env.int("TXN_INGEST_MAX_BATCH", default=1000)
# A hit that joins a case re-assesses its investigation when its amount is at least this much
# (settlement currency) above the largest the investigation assessed, or when it is a block
# rule's hit (casework/transactions/reassess.py): a 949 EUR purchase after a 1 EUR test charge
# does, the 2 EUR charge after it does not.
try:
    TXN_REASSESS_MIN_INCREASE = Decimal(env.str("TXN_REASSESS_MIN_INCREASE", default="100"))
except InvalidOperation:
    TXN_REASSESS_MIN_INCREASE = Decimal(-1)
if not TXN_REASSESS_MIN_INCREASE.is_finite() or TXN_REASSESS_MIN_INCREASE < 0:
    raise ImproperlyConfigured("TXN_REASSESS_MIN_INCREASE is an amount of at least 0.")
# Decisions at authorisation time (POST /api/transactions/decide: casework/transactions/decisions):
# the live rules are evaluated in order until TXN_DECISION_BUDGET_MS (from the view's
# entry) has passed; then the answer is TXN_DECISION_FALLBACK (allow or review), marked
# timed_out, and the worker's full evaluation records what the rules found.
TXN_DECISION_BUDGET_MS = env.float("TXN_DECISION_BUDGET_MS", default=50.0)
# Velocity counters (casework/transactions/aggregates): empty keeps them in the database, in the
# transaction that stores each transaction (never stale; about 6 queries per decision). A Redis
# URL keeps them there: one round trip per decision for every read and increment, rebuilt from
# the database after Redis loses them (README "Velocity and aggregates in rules": how stale).
TXN_AGGREGATES_REDIS_URL = env("TXN_AGGREGATES_REDIS_URL", default="").strip()
if TXN_AGGREGATES_REDIS_URL and not TXN_AGGREGATES_REDIS_URL.startswith(("redis://", "rediss://", "unix://")):
    raise ImproperlyConfigured("TXN_AGGREGATES_REDIS_URL is a redis:// URL (or empty: counters in the database).")
# Seconds a rebuild of the Redis counters waits after it starts double-counting new transactions
# into the generation it builds, before it reads the database: longer than any request's transaction.
TXN_AGGREGATES_REBUILD_GRACE_S = env.float("TXN_AGGREGATES_REBUILD_GRACE_S", default=2.0)
# The worker's evaluation is woken once per TXN_EVALUATE_COALESCE_MS per web process with every
# transaction committed meanwhile (casework/transactions/monitoring/wake.py); 0: one message per commit.
TXN_EVALUATE_COALESCE_MS = env.float("TXN_EVALUATE_COALESCE_MS", default=20.0)
if not 0 <= TXN_EVALUATE_COALESCE_MS <= 1000:
    raise ImproperlyConfigured("TXN_EVALUATE_COALESCE_MS must be between 0 and 1000.")
TXN_DECISION_FALLBACK = env("TXN_DECISION_FALLBACK", default="allow").strip().lower()
if TXN_DECISION_BUDGET_MS <= 0:
    raise ImproperlyConfigured("TXN_DECISION_BUDGET_MS must be above 0 (milliseconds).")
if TXN_DECISION_FALLBACK not in ("allow", "review"):
    raise ImproperlyConfigured("TXN_DECISION_FALLBACK is allow or review.")
# An Idempotency-Key is remembered this long (IETF draft: the server says how long).
IDEMPOTENCY_KEY_HOURS = env.int("IDEMPOTENCY_KEY_HOURS", default=24)

# --- Release risk (seed 004: casework/releases/agents/pipeline.py) ----------------------------
# The detective's severity thresholds (its offline analyst applies them; its prompt quotes
# them to a model). Error rates are fractions (0.05 = 5 %), p95 response times milliseconds.
# A failed test is critical when marked so or in one of RELEASE_CRITICAL_AREAS; a change is
# risky when its text names one of RELEASE_RISKY_CHANGES as a whole word, or its plural
# (case-insensitive: "auth" in "AUTHORS" does not count, so the auth family is listed in full).
RELEASE_ERROR_RATE_HIGH = env.float("RELEASE_ERROR_RATE_HIGH", default=0.05)
RELEASE_ERROR_RATE_MEDIUM = env.float("RELEASE_ERROR_RATE_MEDIUM", default=0.01)
RELEASE_P95_HIGH_MS = env.float("RELEASE_P95_HIGH_MS", default=1000.0)
RELEASE_P95_MEDIUM_MS = env.float("RELEASE_P95_MEDIUM_MS", default=400.0)
RELEASE_CRITICAL_AREAS = [a.lower() for a in env.list(
    "RELEASE_CRITICAL_AREAS", default=["payments", "payment", "auth", "authentication", "security", "checkout"])]
RELEASE_RISKY_CHANGES = [w.lower() for w in env.list(
    "RELEASE_RISKY_CHANGES", default=["payment", "auth", "authentication", "authorization", "authorisation",
                                      "oauth", "security", "migration", "schema"])]
RELEASE_TOOL_TIMEOUT_SECONDS = env.float("RELEASE_TOOL_TIMEOUT_SECONDS", default=10.0)
if not 0 <= RELEASE_ERROR_RATE_MEDIUM <= RELEASE_ERROR_RATE_HIGH <= 1:
    raise ImproperlyConfigured("Need 0 <= RELEASE_ERROR_RATE_MEDIUM <= RELEASE_ERROR_RATE_HIGH <= 1.")
if not 0 <= RELEASE_P95_MEDIUM_MS <= RELEASE_P95_HIGH_MS or RELEASE_TOOL_TIMEOUT_SECONDS <= 0:
    raise ImproperlyConfigured("Need 0 <= RELEASE_P95_MEDIUM_MS <= RELEASE_P95_HIGH_MS and a positive "
                               "RELEASE_TOOL_TIMEOUT_SECONDS.")
# "Ask the agent" (agents/chat): how many earlier messages of a conversation go to the model
# (the context manager prunes further when the window is small) and the per-answer tool-call cap.
CHAT_HISTORY_MESSAGES = env.int("CHAT_HISTORY_MESSAGES", default=40)
CHAT_MAX_TOOL_CALLS = env.int("CHAT_MAX_TOOL_CALLS", default=6)
# When a conversation outgrows the window: "summarise" (the model summarises the older half,
# one more request) or "truncate" (the oldest messages are dropped).
CHAT_CONTEXT_STRATEGY = env.str("CHAT_CONTEXT_STRATEGY", default="summarise")
if CHAT_CONTEXT_STRATEGY not in ("summarise", "truncate") or CHAT_HISTORY_MESSAGES < 1 or CHAT_MAX_TOOL_CALLS < 1:
    raise ImproperlyConfigured("CHAT_CONTEXT_STRATEGY is summarise or truncate; CHAT_HISTORY_MESSAGES and "
                               "CHAT_MAX_TOOL_CALLS are at least 1.")
# Answers are written into the stored message as they arrive, at most every CHAT_STREAM_WRITE_SECONDS;
# the page reads it every 400 ms. A worker touches its answer every 10 s while waiting on the model;
# one untouched for CHAT_ANSWER_STALE_SECONDS (its worker died, or no worker took it) is shown as
# failed, keeping what arrived.
CHAT_STREAM_WRITE_SECONDS = env.float("CHAT_STREAM_WRITE_SECONDS", default=0.1)
CHAT_ANSWER_STALE_SECONDS = env.int("CHAT_ANSWER_STALE_SECONDS", default=90)
# The offline provider streams its answers word by word, this far apart (it answers at once otherwise).
OFFLINE_STREAM_DELAY_SECONDS = env.float("OFFLINE_STREAM_DELAY_SECONDS", default=0.03)
# An answer with no progress for CHAT_RESEND_AFTER_SECONDS (its task was lost with the broker's
# queue, or its worker died) is sent to a worker again by a sweep (agents.chat.tasks.chat_resend_lost,
# every half of it), for up to CHAT_RESEND_WITHIN_SECONDS after the question; the person need not ask again.
CHAT_RESEND_AFTER_SECONDS = env.int("CHAT_RESEND_AFTER_SECONDS", default=30)
CHAT_RESEND_WITHIN_SECONDS = env.int("CHAT_RESEND_WITHIN_SECONDS", default=600)
if not 10 < CHAT_RESEND_AFTER_SECONDS < CHAT_ANSWER_STALE_SECONDS:
    raise ImproperlyConfigured("CHAT_RESEND_AFTER_SECONDS must be above 10 (the worker's heartbeat) and below "
                               "CHAT_ANSWER_STALE_SECONDS.")
if CHAT_STREAM_WRITE_SECONDS <= 0 or CHAT_ANSWER_STALE_SECONDS < 10 or OFFLINE_STREAM_DELAY_SECONDS < 0:
    raise ImproperlyConfigured("CHAT_STREAM_WRITE_SECONDS is above 0, CHAT_ANSWER_STALE_SECONDS at least 10, "
                               "OFFLINE_STREAM_DELAY_SECONDS at least 0.")

# --- Agent runs (agents/tasks.py, agents/runtime/pipeline.py) --------------------------
# The database says which runs need a worker; a broker message only wakes one, and can be
# lost. Every RUN_SCAN_INTERVAL_SECONDS a sweeper sends a new wake-up to each run still
# queued RUN_QUEUED_STALE_AFTER_SECONDS after it was created (or last re-sent), and to each
# running run whose worker has not reported for RUN_STALE_AFTER_SECONDS. A duplicate wake-up
# is harmless (a run is claimed once). /healthz says "degraded" when a run has been queued
# for twice RUN_QUEUED_STALE_AFTER_SECONDS.
#
# A pipeline run past this many seconds ends timed_out with what it has.
RUN_TIMEOUT_SECONDS = env.int("RUN_TIMEOUT_SECONDS", default=600)
# A running run whose worker has not reported for this long is taken to be dead, and resumes.
RUN_STALE_AFTER_SECONDS = env.int("RUN_STALE_AFTER_SECONDS", default=120)
# A queued run no worker has picked up after this long is sent again: its message may be lost.
RUN_QUEUED_STALE_AFTER_SECONDS = env.int("RUN_QUEUED_STALE_AFTER_SECONDS", default=120)
# How often the sweeper (agents.tasks.resume_stale_runs) looks; Celery beat runs it.
RUN_SCAN_INTERVAL_SECONDS = env.int("RUN_SCAN_INTERVAL_SECONDS", default=30)
if min(RUN_TIMEOUT_SECONDS, RUN_STALE_AFTER_SECONDS, RUN_QUEUED_STALE_AFTER_SECONDS, RUN_SCAN_INTERVAL_SECONDS) < 1:
    raise ImproperlyConfigured("RUN_TIMEOUT_SECONDS, RUN_STALE_AFTER_SECONDS, RUN_QUEUED_STALE_AFTER_SECONDS "
                               "and RUN_SCAN_INTERVAL_SECONDS must be at least 1.")
# A run stops after this many steps (a planner that keeps choosing), keeping its results;
# a pipeline may set a lower limit of its own (Pipeline.max_steps).
RUN_MAX_STEPS = env.int("RUN_MAX_STEPS", default=100)
if RUN_MAX_STEPS < 1:
    raise ImproperlyConfigured("RUN_MAX_STEPS must be at least 1.")

# --- Approvals of what agents do (agents/runtime/approval.py, agents/runtime/pause.py) ---
# Every tool declares its consequence: read_only, drafts, or acts (talks to a person or a
# system outside Casework). Whether an "acts" call waits for a person's approval is decided
# per tool and case type: AGENT_APPROVALS maps a tool's name to {case type or "*": rule},
# a rule being "always", "never", or {"mode": "above", "argument": "<name>", "threshold": n}
# (ask when that argument exceeds n). An admin's ApprovalPolicy row overrides it. An "acts"
# tool named nowhere is "always": anything that contacts a customer, an employee or a bank
# system waits for a person until someone decides otherwise. read_only and drafts never wait.
# Given as JSON in the environment, e.g. AGENT_APPROVALS='{"send_notification": {"*": "always"}}'.
AGENT_APPROVALS = env.json("AGENT_APPROVALS", default={
    "send_notification": {"*": "always"},
})
# A pending approval expires after this long; its run ends "Approval expired" (the step never ran).
AGENT_APPROVAL_TTL_SECONDS = env.int("AGENT_APPROVAL_TTL_SECONDS", default=3 * 24 * 3600)
# How often the expiry sweep (agents.tasks.approvals_expire) looks.
AGENT_APPROVAL_SCAN_SECONDS = env.int("AGENT_APPROVAL_SCAN_SECONDS", default=300)
if AGENT_APPROVAL_TTL_SECONDS < 60 or AGENT_APPROVAL_SCAN_SECONDS < 1:
    raise ImproperlyConfigured("AGENT_APPROVAL_TTL_SECONDS must be at least 60 and AGENT_APPROVAL_SCAN_SECONDS at least 1.")
if not isinstance(AGENT_APPROVALS, dict):
    raise ImproperlyConfigured("AGENT_APPROVALS must be a JSON object: {tool: {case type or \"*\": rule}}.")

# Periodic tasks, run by `celery worker --beat` (bin/run); beat keeps its schedule under var/.
CELERY_BEAT_SCHEDULE = {
    "access-reminders": {
        "task": "casework.access.tasks.access_send_reminders",
        "schedule": ACCESS_REMINDER_CHECK_MINUTES * 60.0,
    },
    # Runs stuck queued (lost message) or running (dead worker) are sent again and resume.
    "agents-resume-stale-runs": {
        "task": "agents.tasks.resume_stale_runs",
        "schedule": float(RUN_SCAN_INTERVAL_SECONDS),
        # A scan still waiting in a busy queue when the next is sent is dropped: piled-up
        # scans re-sent the same runs many times over (bench/README.md, kill test).
        "options": {"expires": float(RUN_SCAN_INTERVAL_SECONDS)},
    },
}
# A killed worker's budget reservations and leases are given back (casework/budgets/holds.py).
CELERY_BEAT_SCHEDULE["budgets-holds-release"] = {
    "task": "casework.budgets.tasks.budget_holds_release",
    "schedule": float(RUN_SCAN_INTERVAL_SECONDS),
    "options": {"expires": float(RUN_SCAN_INTERVAL_SECONDS)},
}
# Deadlines: warn CASE_SLA_WARN_HOURS before a case's due_at, record breaches (once each).
CELERY_BEAT_SCHEDULE["cases-sla-check"] = {
    "task": "casework.cases.notifications.tasks.cases_sla_check",
    "schedule": CASE_SLA_CHECK_MINUTES * 60.0,
    "options": {"expires": CASE_SLA_CHECK_MINUTES * 60.0},
}
# Support tickets pending on a silent customer: closed for inactivity (casework/support/tasks.py).
CELERY_BEAT_SCHEDULE["support-auto-close"] = {
    "task": "casework.support.tasks.support_auto_close",
    "schedule": SUPPORT_AUTO_CLOSE_CHECK_MINUTES * 60.0,
    "options": {"expires": SUPPORT_AUTO_CLOSE_CHECK_MINUTES * 60.0},
}
# "Ask the agent" answers whose task was lost, or whose worker died, are sent again.
CELERY_BEAT_SCHEDULE["agent-approvals-expire"] = {
    "task": "agents.tasks.approvals_expire",
    "schedule": float(AGENT_APPROVAL_SCAN_SECONDS),
    "options": {"expires": float(AGENT_APPROVAL_SCAN_SECONDS)},
}
CELERY_BEAT_SCHEDULE["chat-resend-lost"] = {
    "task": "agents.chat.tasks.chat_resend_lost",
    "schedule": CHAT_RESEND_AFTER_SECONDS / 2,
    "options": {"expires": CHAT_RESEND_AFTER_SECONDS / 2},
}
# Personal data past its retention is removed (casework/privacy/tasks.py), held cases kept.
CELERY_BEAT_SCHEDULE["privacy-retention"] = {
    "task": "casework.privacy.tasks.privacy_retention_enforce",
    "schedule": RETENTION_CHECK_HOURS * 3600.0,
    "options": {"expires": RETENTION_CHECK_HOURS * 3600.0},
}
# Erasure requests stuck approved or running (a killed worker) are sent again (casework/privacy/tasks.py).
CELERY_BEAT_SCHEDULE["privacy-erasure-sweep"] = {
    "task": "casework.privacy.tasks.privacy_erasure_sweep",
    "schedule": float(ERASURE_SWEEP_SECONDS),
    "options": {"expires": float(ERASURE_SWEEP_SECONDS)},
}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# --- Audit trail (audit/) ---------------------------------------------------------------
# Writers append audit entries pending, with no lock; a sequencer links them into the hash
# chain in batches (audit.services.audit_sequence). AUDIT_SEQUENCER says who runs it after
# a commit that wrote entries:
#   background (default): one thread per process, woken by the commit; many commits are
#                         linked in one pass and the writer's thread issues no extra SQL.
#   inline: the committing thread, right after its commit (tests; deterministic).
#   off: nobody after commit; only the periodic task below.
# The periodic task runs every AUDIT_SEQUENCE_INTERVAL_SECONDS whatever the mode, and links
# what a stopped process left pending.
AUDIT_SEQUENCER = env("AUDIT_SEQUENCER", default="background")
AUDIT_SEQUENCE_INTERVAL_SECONDS = env.float("AUDIT_SEQUENCE_INTERVAL_SECONDS", default=5.0)
# background: how long a woken sequencer waits for more commits before its pass, so that one
# pass (six statements and a lock) links the entries of many commits. 20 ms linked about 12
# entries a pass in the fraud throughput bench, 100 ms several times as many, for 10% more LLM
# calls/s (bench/README.md, issue 29); an entry stays pending that much longer.
AUDIT_SEQUENCER_COALESCE_MS = env.float("AUDIT_SEQUENCER_COALESCE_MS", default=100.0)
if AUDIT_SEQUENCER not in ("background", "inline", "off"):
    raise ImproperlyConfigured(f"AUDIT_SEQUENCER={AUDIT_SEQUENCER!r}: use background, inline or off.")
if AUDIT_SEQUENCE_INTERVAL_SECONDS <= 0:
    raise ImproperlyConfigured("AUDIT_SEQUENCE_INTERVAL_SECONDS must be above 0.")
if not 0 <= AUDIT_SEQUENCER_COALESCE_MS <= 1000:
    raise ImproperlyConfigured("AUDIT_SEQUENCER_COALESCE_MS must be between 0 and 1000.")
CELERY_BEAT_SCHEDULE["audit-sequence-pending"] = {
    "task": "audit.tasks.audit_sequence_pending",
    "schedule": AUDIT_SEQUENCE_INTERVAL_SECONDS,
    # A pass that waited longer than one interval in the queue is redundant: the next one comes.
    "options": {"expires": AUDIT_SEQUENCE_INTERVAL_SECONDS},
}

# Signed checkpoints of the chain head (audit/checkpoints.py), kept outside the database so
# that a chain rewritten with every hash recomputed is found (README, "Audit checkpoints").
# AUDIT_SIGNING_KEY: an Ed25519 private key, PEM or raw 32 bytes in base64, or the path of a
# file holding one; `make run` generates var/audit_signing_key once per checkout. Without a key
# no checkpoint is written (the /audit/key/ page says so).
AUDIT_SIGNING_KEY = env("AUDIT_SIGNING_KEY", default="")
if not AUDIT_SIGNING_KEY and (VAR_DIR / "audit_signing_key").is_file():
    AUDIT_SIGNING_KEY = str(VAR_DIR / "audit_signing_key")
# The log's name: the checkpoint's first line and its key's name (no spaces, no "+").
AUDIT_CHECKPOINT_ORIGIN = env("AUDIT_CHECKPOINT_ORIGIN", default="casework/audit")
# A checkpoint when this many entries were added since the last one, or this many minutes
# passed (and the chain grew), whichever comes first; checked every _CHECK_SECONDS.
AUDIT_CHECKPOINT_EVERY_ENTRIES = env.int("AUDIT_CHECKPOINT_EVERY_ENTRIES", default=1000)
AUDIT_CHECKPOINT_EVERY_MINUTES = env.float("AUDIT_CHECKPOINT_EVERY_MINUTES", default=10.0)
AUDIT_CHECKPOINT_CHECK_SECONDS = env.float("AUDIT_CHECKPOINT_CHECK_SECONDS", default=60.0)
# Where checkpoints are written: STORAGES["audit_checkpoints"] (below), by default this
# directory; keep it (or a copy) where the database's administrators cannot write.
AUDIT_CHECKPOINT_DIR = Path(env("AUDIT_CHECKPOINT_DIR", default=str(VAR_DIR / "checkpoints")))
# Retired public keys (one signed-note verifier key per line), so that checkpoints signed
# before a key rotation still verify. `manage.py audit_key` prints the current key's line.
AUDIT_CHECKPOINT_KEYRING = Path(env("AUDIT_CHECKPOINT_KEYRING", default=str(VAR_DIR / "audit_keyring")))
# Optional: each new checkpoint is also POSTed here (text/plain, the signed note).
AUDIT_CHECKPOINT_WEBHOOK_URL = env("AUDIT_CHECKPOINT_WEBHOOK_URL", default="")
if not AUDIT_CHECKPOINT_ORIGIN or any(c.isspace() or c == "+" for c in AUDIT_CHECKPOINT_ORIGIN):
    raise ImproperlyConfigured("AUDIT_CHECKPOINT_ORIGIN must be non-empty, with no spaces and no '+'.")
if AUDIT_CHECKPOINT_EVERY_ENTRIES < 1 or AUDIT_CHECKPOINT_EVERY_MINUTES <= 0 or AUDIT_CHECKPOINT_CHECK_SECONDS <= 0:
    raise ImproperlyConfigured("AUDIT_CHECKPOINT_EVERY_ENTRIES must be at least 1, and "
                               "AUDIT_CHECKPOINT_EVERY_MINUTES and AUDIT_CHECKPOINT_CHECK_SECONDS above 0.")
STORAGES["audit_checkpoints"] = {
    "BACKEND": "django.core.files.storage.FileSystemStorage",
    "OPTIONS": {"location": str(AUDIT_CHECKPOINT_DIR)},
}
CELERY_BEAT_SCHEDULE["audit-checkpoint-publish"] = {
    "task": "audit.tasks.audit_checkpoint_publish",
    "schedule": AUDIT_CHECKPOINT_CHECK_SECONDS,
    "options": {"expires": AUDIT_CHECKPOINT_CHECK_SECONDS},
}

# --- Outgoing webhooks (casework/outbox) ------------------------------------------------
# Seconds to wait after each failed attempt (Svix's schedule: 5 s, 5 min, 30 min, 2 h, 5 h,
# 10 h, 10 h: eight attempts over about 27 hours), each with +/- WEBHOOK_RETRY_JITTER of
# itself at random; after the last, the delivery is dead and the endpoint's owner is told.
WEBHOOK_RETRY_SCHEDULE = [int(s) for s in env.list("WEBHOOK_RETRY_SCHEDULE",
                                                   default=["5", "300", "1800", "7200", "18000", "36000", "36000"])]
WEBHOOK_RETRY_JITTER = env.float("WEBHOOK_RETRY_JITTER", default=0.2)
if not WEBHOOK_RETRY_SCHEDULE or min(WEBHOOK_RETRY_SCHEDULE) < 1 or not 0 <= WEBHOOK_RETRY_JITTER < 1:
    raise ImproperlyConfigured("WEBHOOK_RETRY_SCHEDULE needs at least one delay of 1 s or more, "
                               "and WEBHOOK_RETRY_JITTER a fraction from 0 up to (not including) 1.")
# Circuit breaker: an endpoint with at least WEBHOOK_BREAKER_MIN_ATTEMPTS attempts in the last
# WEBHOOK_BREAKER_WINDOW_SECONDS, at least WEBHOOK_BREAKER_FAILURE_RATE of them failed, is paused
# for the cool-off; its deliveries wait (spending no attempt), then one goes as a probe whose
# 2xx resumes the rest. A rate, not a run of failures: a receiver failing 30% of attempts under
# concurrency fails five in a row by chance, and paused it for five minutes.
WEBHOOK_BREAKER_WINDOW_SECONDS = env.int("WEBHOOK_BREAKER_WINDOW_SECONDS", default=60)
WEBHOOK_BREAKER_MIN_ATTEMPTS = env.int("WEBHOOK_BREAKER_MIN_ATTEMPTS", default=20)
WEBHOOK_BREAKER_FAILURE_RATE = env.float("WEBHOOK_BREAKER_FAILURE_RATE", default=0.5)
WEBHOOK_BREAKER_COOLOFF_SECONDS = env.int("WEBHOOK_BREAKER_COOLOFF_SECONDS", default=300)
if "WEBHOOK_BREAKER_THRESHOLD" in env.ENVIRON:
    raise ImproperlyConfigured("WEBHOOK_BREAKER_THRESHOLD (failures in a row) is gone: the webhook breaker opens on "
                               "a failure rate. Set WEBHOOK_BREAKER_MIN_ATTEMPTS, WEBHOOK_BREAKER_FAILURE_RATE and "
                               "WEBHOOK_BREAKER_WINDOW_SECONDS instead (README.md, Outgoing webhooks).")
if (WEBHOOK_BREAKER_WINDOW_SECONDS < 1 or WEBHOOK_BREAKER_MIN_ATTEMPTS < 1
        or not 0 < WEBHOOK_BREAKER_FAILURE_RATE <= 1 or WEBHOOK_BREAKER_COOLOFF_SECONDS < 1):
    raise ImproperlyConfigured("WEBHOOK_BREAKER_WINDOW_SECONDS, WEBHOOK_BREAKER_MIN_ATTEMPTS and "
                               "WEBHOOK_BREAKER_COOLOFF_SECONDS must be at least 1, WEBHOOK_BREAKER_FAILURE_RATE "
                               "a fraction above 0 and at most 1.")
# Host names, addresses or CIDRs an endpoint may point at although they are loopback,
# private, link-local or metadata addresses (SSRF guard), and where plain http is allowed:
# e.g. WEBHOOK_ALLOWED_HOSTS=hooks.internal,10.1.0.0/16. Empty by default.
WEBHOOK_ALLOWED_HOSTS = env.list("WEBHOOK_ALLOWED_HOSTS", default=[])
# How often the sweep sends due deliveries (retries, and any whose broker message was lost),
# and how long after a message was sent the sweep sends another for the same delivery.
WEBHOOK_SWEEP_INTERVAL_SECONDS = env.float("WEBHOOK_SWEEP_INTERVAL_SECONDS", default=5.0)
WEBHOOK_REDELIVER_AFTER_SECONDS = env.int("WEBHOOK_REDELIVER_AFTER_SECONDS", default=60)
# A worker's hold on an outbox row (casework/outbox/leases.py): a delivery it is sending, the
# rows a sweep is handing to the broker. Renewed every third of it while the worker works; a
# dead worker's rows are taken again once it has passed (not after REDELIVER_AFTER).
WEBHOOK_LEASE_SECONDS = env.int("WEBHOOK_LEASE_SECONDS", default=10)
# A failed attempt's retry due within this many seconds is sent at once with a Celery ETA at its
# due time (held for it until then plus a lease), so it goes on time rather than at the next
# sweep; a later one is sent by the sweep when due. Under Redis's visibility timeout (3600 s):
# an ETA message held longer is handed out again.
WEBHOOK_RETRY_ETA_MAX_SECONDS = env.int("WEBHOOK_RETRY_ETA_MAX_SECONDS", default=900)
if WEBHOOK_LEASE_SECONDS < 1 or WEBHOOK_RETRY_ETA_MAX_SECONDS < 0:
    raise ImproperlyConfigured("WEBHOOK_LEASE_SECONDS must be at least 1 and WEBHOOK_RETRY_ETA_MAX_SECONDS 0 or more.")
# A rotated-out secret keeps signing (a second signature) for this long.
WEBHOOK_SECRET_OVERLAP_HOURS = env.int("WEBHOOK_SECRET_OVERLAP_HOURS", default=24)
# Characters of a receiver's answer kept in the delivery log.
WEBHOOK_RESPONSE_KEEP_CHARS = env.int("WEBHOOK_RESPONSE_KEEP_CHARS", default=2000)
# Actions (a card block, a revert ...) not confirmed this many minutes after the decision are
# flagged overdue on the case and in the queue; ACTION_CONFIRM_DEADLINES overrides it per
# event type, e.g. ACTION_CONFIRM_DEADLINES="release.decided=240;access.revert_requested=1440".
ACTION_CONFIRM_DEADLINE_MINUTES = env.int("ACTION_CONFIRM_DEADLINE_MINUTES", default=60)
ACTION_CONFIRM_DEADLINES = env.dict("ACTION_CONFIRM_DEADLINES", cast={"value": int}, default={})
if ACTION_CONFIRM_DEADLINE_MINUTES < 1 or any(m < 1 for m in ACTION_CONFIRM_DEADLINES.values()):
    raise ImproperlyConfigured("ACTION_CONFIRM_DEADLINE_MINUTES and ACTION_CONFIRM_DEADLINES take whole minutes, 1 or more.")
CELERY_BEAT_SCHEDULE["outbox-deliver-due"] = {
    "task": "casework.outbox.tasks.outbox_deliver_due",
    "schedule": WEBHOOK_SWEEP_INTERVAL_SECONDS,
    "options": {"expires": WEBHOOK_SWEEP_INTERVAL_SECONDS},
}
# Transaction monitoring: evaluate transactions whose message was lost; forget old idempotency keys.
CELERY_BEAT_SCHEDULE["txn-evaluate-pending"] = {
    "task": "casework.transactions.monitoring.tasks.monitoring_evaluate_pending",
    "schedule": 10.0,
    "options": {"expires": 10.0},
}
# Velocity counters: drop the buckets no window reads any more (casework.transactions.aggregates).
CELERY_BEAT_SCHEDULE["txn-aggregates-prune"] = {
    "task": "casework.transactions.monitoring.tasks.aggregates_prune",
    "schedule": 3600.0,
    "options": {"expires": 3600.0},
}
# Redis velocity counters lost (a Redis restart): rebuild them from the database.
CELERY_BEAT_SCHEDULE["txn-aggregates-ensure"] = {
    "task": "casework.transactions.monitoring.tasks.aggregates_ensure",
    "schedule": 30.0,
    "options": {"expires": 30.0},
}
CELERY_BEAT_SCHEDULE["idempotency-purge"] = {
    "task": "casework.idempotency.tasks.idempotency_purge",
    "schedule": 3600.0,
    "options": {"expires": 3600.0},
}

# --- Outgoing email (casework/outbox/email.py: support replies) ------------------------
# Sent through EMAIL_URL's backend, at least once, by the same kind of sweep as the webhooks.
# Seconds between a failed attempt and the next (default 1 min, 5 min, 30 min, 2 h, 6 h:
# six attempts over about 8.5 hours, each +/- WEBHOOK_RETRY_JITTER); then the email is failed.
EMAIL_RETRY_SCHEDULE = [int(s) for s in env.list("EMAIL_RETRY_SCHEDULE", default=["60", "300", "1800", "7200",
                                                                                   "21600"])]
if not EMAIL_RETRY_SCHEDULE or min(EMAIL_RETRY_SCHEDULE) < 1:
    raise ImproperlyConfigured("EMAIL_RETRY_SCHEDULE needs at least one delay of 1 s or more.")
# The domain of the Message-IDs we send (default: DEFAULT_FROM_EMAIL's); a message whose
# Message-ID has this domain came from us (loop detection on inbound mail).
EMAIL_MESSAGE_ID_DOMAIN = env("EMAIL_MESSAGE_ID_DOMAIN", default=DEFAULT_FROM_EMAIL.rpartition("@")[2].rstrip("> ") or "localhost")
CELERY_BEAT_SCHEDULE["outbox-email-send-due"] = {
    "task": "casework.outbox.tasks.outbox_email_send_due",
    "schedule": WEBHOOK_SWEEP_INTERVAL_SECONDS,
    "options": {"expires": WEBHOOK_SWEEP_INTERVAL_SECONDS},
}

# --- LLM providers ---------------------------------------------------------------------
# offline (default): deterministic rule-based analysts, no key, no network.
# openai: any OpenAI-compatible endpoint (OPENAI_BASE_URL). gemini: Google's compatible
# endpoint (chosen automatically when only GOOGLE_API_KEY is set). anthropic: Messages API.
OPENAI_API_KEY = env("OPENAI_API_KEY", default="")
OPENAI_BASE_URL = env("OPENAI_BASE_URL", default="")
GOOGLE_API_KEY = env("GOOGLE_API_KEY", default="")
ANTHROPIC_API_KEY = env("ANTHROPIC_API_KEY", default="")
ANTHROPIC_BASE_URL = env("ANTHROPIC_BASE_URL", default="")
LLM_PROVIDER = env("LLM_PROVIDER", default="gemini" if GOOGLE_API_KEY and not OPENAI_API_KEY else "offline")
if LLM_PROVIDER not in ("offline", "openai", "gemini", "anthropic"):
    raise ImproperlyConfigured(f"LLM_PROVIDER={LLM_PROVIDER!r}: use offline, openai, gemini or anthropic.")
LLM_MODEL = env("LLM_MODEL", default="")
LLM_TIMEOUT_SECONDS = env.float("LLM_TIMEOUT_SECONDS", default=60.0)
LLM_MAX_CONCURRENCY = env.int("LLM_MAX_CONCURRENCY", default=64)
LLM_RATE_LIMIT_RETRIES = env.int("LLM_RATE_LIMIT_RETRIES", default=3)
LLM_RETRY_INITIAL_DELAY = env.float("LLM_RETRY_INITIAL_DELAY", default=1.0)
LLM_RETRY_MAX_DELAY = env.float("LLM_RETRY_MAX_DELAY", default=60.0)
AGENT_CALL_DELAY_SECONDS = env.float("AGENT_CALL_DELAY_SECONDS", default=0.0)
LLM_CONTEXT_TOKENS = env.int("LLM_CONTEXT_TOKENS", default=128_000)
# Prices in US$ per million tokens (input, output), per provider and model, as JSON:
# {"openai": {"gpt-4o-mini": [0.15, 0.60]}}; a flat {"model": [in, out]} prices a model for any
# provider (agents/llm/prices.py). Shown read-only in the admin (Budgets > Prices). A model not
# in the table costs nothing: its calls count only against a case's token budget.
LLM_PRICES = env.json("LLM_PRICES", default={
    "openai": {"gpt-4o-mini": [0.15, 0.60], "gpt-4o": [2.5, 10.0], "gpt-4.1": [2.0, 8.0],
               "gpt-4.1-mini": [0.40, 1.60]},
    "gemini": {"gemini-2.0-flash": [0.10, 0.40], "gemini-2.5-flash": [0.30, 2.50]},
    "anthropic": {"claude-sonnet-4-5": [3.0, 15.0], "claude-haiku-4-5": [1.0, 5.0]},
    "offline": {"offline-rules-v1": [0, 0]},
})
for _provider, _models in LLM_PRICES.items():
    for _model, _pair in (_models.items() if isinstance(_models, dict) else [(_provider, _models)]):
        if not (isinstance(_pair, list | tuple) and len(_pair) == 2
                and all(isinstance(v, int | float) and v >= 0 for v in _pair)):
            raise ImproperlyConfigured(f"LLM_PRICES: {_provider}/{_model} must be [input, output] US$ per "
                                       "million tokens, each a number of 0 or more.")
# Budgets per case (casework/budgets): every model call made for a case is charged to it
# before it is sent (a reservation of its estimate) and settled after. CASE_BUDGETS gives each
# case type's budget, "*" the rest: {"fraud": {"usd": 5, "tokens": 2000000}}; a missing or null
# "usd" / "tokens" sets no limit of that kind. The admin's "Case type budgets" override these,
# and a lead overrides one case's. At CASE_BUDGET_WARN_RATIO of either limit the assignee is
# warned once; a call the rest would not cover is refused, and its run waits in "Budget reached".
CASE_BUDGETS_ENABLED = env.bool("CASE_BUDGETS_ENABLED", default=True)
CASE_BUDGETS = env.json("CASE_BUDGETS", default={"*": {"usd": 5.0, "tokens": 2_000_000}})
CASE_BUDGET_WARN_RATIO = env.float("CASE_BUDGET_WARN_RATIO", default=0.8)
# PostgreSQL: a process reserves a share of a case's headroom (this many calls' estimates) in
# one statement and hands it out to the case's next calls in memory, while the budget leaves as
# much again beside it (agents/runtime/charging.py, _Lease); what is left goes back after the
# case's calls pause for CASE_BUDGET_LEASE_IDLE_SECONDS. 0: every call's reservation is a statement.
# When half of a lease is handed out, a refill is reserved ahead (no call waits for it), each
# twice the last, up to CASE_BUDGET_LEASE_MAX_CALLS calls' estimates, while the budget leaves as
# much again beside it.
CASE_BUDGET_LEASE_CALLS = env.int("CASE_BUDGET_LEASE_CALLS", default=16)
CASE_BUDGET_LEASE_MAX_CALLS = env.int("CASE_BUDGET_LEASE_MAX_CALLS", default=32)
CASE_BUDGET_LEASE_IDLE_SECONDS = env.float("CASE_BUDGET_LEASE_IDLE_SECONDS", default=1.0)
# What each process holds reserved in a case's ledger is recorded with it (casework/budgets/holds.py);
# a process renews its holds every quarter of CASE_BUDGET_HOLD_STALE_SECONDS while it has any. A
# sweep (every RUN_SCAN_INTERVAL_SECONDS) gives back to their cases the holds of processes that are
# gone: at once for a pid on the sweeping worker's host that no longer runs, and for any hold not
# renewed for CASE_BUDGET_HOLD_STALE_SECONDS (a killed worker on another host, or one frozen).
CASE_BUDGET_HOLD_STALE_SECONDS = env.int("CASE_BUDGET_HOLD_STALE_SECONDS", default=120)
if CASE_BUDGET_HOLD_STALE_SECONDS < 4:
    raise ImproperlyConfigured("CASE_BUDGET_HOLD_STALE_SECONDS must be at least 4.")
if CASE_BUDGET_LEASE_CALLS < 0 or CASE_BUDGET_LEASE_IDLE_SECONDS < 0 or CASE_BUDGET_LEASE_MAX_CALLS < 0:
    raise ImproperlyConfigured("CASE_BUDGET_LEASE_CALLS, CASE_BUDGET_LEASE_MAX_CALLS and "
                               "CASE_BUDGET_LEASE_IDLE_SECONDS must not be negative.")
for _type, _limits in CASE_BUDGETS.items():
    if not isinstance(_limits, dict) or set(_limits) - {"usd", "tokens"} or any(
            v is not None and (not isinstance(v, int | float) or v < 0) for v in _limits.values()):
        raise ImproperlyConfigured(f"CASE_BUDGETS[{_type!r}] must be {{\"usd\": number or null, "
                                   "\"tokens\": number or null}, each 0 or more.")
if not 0 < CASE_BUDGET_WARN_RATIO <= 1:
    raise ImproperlyConfigured("CASE_BUDGET_WARN_RATIO must be in (0, 1].")
# Circuit breaker per provider (agents/llm/breaker.py): after LLM_BREAKER_THRESHOLD connection
# failures in a row no request is sent for LLM_BREAKER_COOLDOWN_SECONDS; runs wait in the queue
# ("waiting for the model"), spending no retries, then one probe tries the endpoint again.
# Its state lives in the cache (CACHE_URL): use Redis so that every worker and /healthz share it.
# 0 turns the breaker off.
LLM_BREAKER_THRESHOLD = env.int("LLM_BREAKER_THRESHOLD", default=5)
LLM_BREAKER_COOLDOWN_SECONDS = env.float("LLM_BREAKER_COOLDOWN_SECONDS", default=30.0)
if LLM_BREAKER_THRESHOLD < 0 or LLM_BREAKER_COOLDOWN_SECONDS < 1:
    raise ImproperlyConfigured("LLM_BREAKER_THRESHOLD must be 0 (off) or more, LLM_BREAKER_COOLDOWN_SECONDS at least 1.")
if LLM_MAX_CONCURRENCY < 1:
    raise ImproperlyConfigured("LLM_MAX_CONCURRENCY must be at least 1.")

# The garbage collector in workers and web processes (casework/ops/gc_tuning.py): what they
# hold after start-up is frozen out of the collector's passes, and young passes run every
# GC_THRESHOLD[0] net allocations instead of CPython's 700.
GC_FREEZE = env.bool("GC_FREEZE", default=True)
GC_THRESHOLD = tuple(env.list("GC_THRESHOLD", cast=int, default=[20000, 10, 10]))
if len(GC_THRESHOLD) != 3 or GC_THRESHOLD[0] < 1 or min(GC_THRESHOLD) < 0:
    raise ImproperlyConfigured("GC_THRESHOLD: three integers, the first at least 1 (CPython's default: 700,10,10).")

# --- Evaluation suites (agents/evals, manage.py run_evals) -------------------------------
# The LLM-as-judge runs only with a key, on its own model (any OpenAI-compatible endpoint);
# without one it is reported as skipped. Baselines are JSON files, committed by default.
EVAL_JUDGE_API_KEY = env("EVAL_JUDGE_API_KEY", default="")
EVAL_JUDGE_MODEL = env("EVAL_JUDGE_MODEL", default="")
EVAL_JUDGE_BASE_URL = env("EVAL_JUDGE_BASE_URL", default="")
EVALS_BASELINE_DIR = env("EVALS_BASELINE_DIR", default=str(BASE_DIR / "agents" / "evals" / "baselines"))

# --- Observability ---------------------------------------------------------------------
TRACE_DIR = Path(env("TRACE_DIR", default=str(VAR_DIR / "traces")))
OTEL_EXPORTER_OTLP_ENDPOINT = env("OTEL_EXPORTER_OTLP_ENDPOINT", default="")
# HTTP request spans in trace files too (one file per request): by default only where they go
# nowhere else. With OTLP a busy site would otherwise write a file per page view.
TRACE_FILE_REQUESTS = env.bool("TRACE_FILE_REQUESTS", default=not OTEL_EXPORTER_OTLP_ENDPOINT)

# HTTP request spans (audit.tracing.instrument_django) for every URL but these: regular
# expressions searched in the full URL, comma-separated, as the instrumentation's own
# environment variable takes them. Static files, and the scrapes and probes that come every
# few seconds, would be most of the traces and say nothing.
OTEL_PYTHON_DJANGO_EXCLUDED_URLS = env("OTEL_PYTHON_DJANGO_EXCLUDED_URLS", default="/static/,/metrics$,/healthz$")

# Log lines (audit/logs.py): `json`, one JSON object per line with the request's or run's
# correlation id, trace and span ids (production: what a log store reads); `plain`, one line
# of text with the correlation id in brackets (`make run` sets it for its console).
LOG_FORMAT = env("LOG_FORMAT", default="json")
if LOG_FORMAT not in ("json", "plain"):
    raise ImproperlyConfigured("LOG_FORMAT must be json or plain.")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"context": {"()": "audit.logs.ContextFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(correlation_id)s] %(message)s"},
        "json": {"()": "audit.logs.JsonFormatter"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["context"]}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="INFO")},
    "loggers": {
        # Django's own handlers (a plain console with DEBUG on, mail_admins) give way to the root's:
        # one format on one stream.
        "django": {"level": env("LOG_LEVEL", default="INFO")},
        "django.db.backends": {"level": "WARNING"},
        # One INFO line per HTTP request from the SDKs' HTTP clients: every LLM call is already
        # an AgentCall row, an audit entry and a span, and formatting the line cost a busy
        # worker ~2% of its CPU (bench/README.md). HTTP_CLIENT_LOG_LEVEL=INFO shows them.
        "httpx": {"level": env("HTTP_CLIENT_LOG_LEVEL", default="WARNING")},
        "httpx2": {"level": env("HTTP_CLIENT_LOG_LEVEL", default="WARNING")},
    },
}

# --- Entities across cases (casework/entities) -----------------------------------------
# How an account number looks in free text (a support ticket's messages): what the ticket
# names besides its customer. A regular expression; the whole match is the account id.
ENTITIES_ACCOUNT_ID_PATTERN = env("ENTITIES_ACCOUNT_ID_PATTERN", default=r"\bACC-\d{3,12}\b")
try:
    re.compile(ENTITIES_ACCOUNT_ID_PATTERN)
except re.error as exc:
    raise ImproperlyConfigured(f"ENTITIES_ACCOUNT_ID_PATTERN is not a valid regular expression: {exc}") from exc
