"""Sign-in through the organisation's identity provider: OpenID Connect with mozilla-django-oidc.

The flow (authorization code with PKCE):
1. /oidc/authenticate/ stores a random state, nonce and PKCE verifier in the session and sends
   the browser to the provider's authorization endpoint.
2. The provider sends it back to /oidc/callback/ with a code and the state. An unknown state
   is refused. The code is exchanged (with the verifier) at the token endpoint, server to
   server; the ID token's signature is checked against the provider's JWKS (a key id not in
   the cached set fetches the set again, so a rotated key is picked up), then its issuer,
   audience, expiry and nonce.
3. The person is found by (issuer, subject), or by userName when SCIM provisioned them
   first, or created; their roles are set from the groups claim through OIDC_GROUP_ROLES. No
   mapped group: refused (and any roles they had are taken away).
Every refusal is an `auth.oidc_refused` audit entry; a sign-in is `auth.login` (method oidc);
a role change is `user.roles_changed`. OIDCSessionRefresh repeats 1-3 silently (prompt=none)
once a sign-in is older than OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS, so that someone removed
from their groups loses access at their next request after that.

Endpoints come from the provider's discovery document (OIDC_ISSUER), read once per process.
"""

from __future__ import annotations

import json
import logging
import threading
from urllib.parse import urlencode

import jwt
import requests
from django.conf import settings
from django.contrib import auth, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import IntegrityError, transaction
from django.http import Http404, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import redirect, resolve_url
from django.urls import reverse
from django.utils.crypto import get_random_string
from django.utils.decorators import method_decorator
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.generic import View
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import (
    absolutify,
    add_state_and_verifier_and_nonce_to_session,
    generate_code_challenge,
)
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, get_next_url

from audit.services import audit_record
from casework.people.models import ExternalAccount
from casework.people.services import roles_for_groups, user_roles_set
from casework.people.teams import user_teams_sync

logger = logging.getLogger(__name__)

ACTOR = "oidc"  # the audit trail's name for changes the identity provider's answer made

_DISCOVERED = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
    "OIDC_OP_END_SESSION_ENDPOINT": "end_session_endpoint",
}
_lock = threading.Lock()
_metadata: dict[str, dict] = {}
_jwks: dict[str, dict] = {}


class OIDCRefused(Exception):
    """A sign-in through the provider that must not succeed; `reason` is safe to show and audit."""

    def __init__(self, reason: str, *, username: str = ""):
        super().__init__(reason)
        self.reason = reason
        self.username = username


def oidc_enabled() -> bool:
    return bool(settings.OIDC_RP_CLIENT_ID)


def _discovery_url() -> str:
    return settings.OIDC_DISCOVERY_URL or (
        f"{settings.OIDC_ISSUER}/.well-known/openid-configuration" if settings.OIDC_ISSUER else "")


def provider_metadata() -> dict:
    """The provider's discovery document, fetched at first use and kept for the process."""
    url = _discovery_url()
    if not url:
        return {}
    with _lock:
        if url in _metadata:
            return _metadata[url]
    response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
    response.raise_for_status()
    document = response.json()
    if settings.OIDC_ISSUER and document.get("issuer", "").rstrip("/") != settings.OIDC_ISSUER:
        raise ImproperlyConfigured(f"The discovery document at {url} names issuer {document.get('issuer')!r}, "
                                   f"not OIDC_ISSUER={settings.OIDC_ISSUER!r}.")
    with _lock:
        _metadata[url] = document
    return document


def oidc_setting(attr: str, *default):
    """A setting, with the provider's endpoints filled in from its discovery document."""
    value = getattr(settings, attr, None)
    if attr in _DISCOVERED and not value:
        value = provider_metadata().get(_DISCOVERED[attr]) or ""
    if value in (None, "") and default:
        return default[0]
    if value is None:
        raise ImproperlyConfigured(f"Setting {attr} not found")
    return value


def oidc_issuer() -> str:
    return settings.OIDC_ISSUER or provider_metadata().get("issuer", "").rstrip("/")


def _jwks_fetch(url: str, *, refresh: bool) -> dict:
    with _lock:
        if not refresh and url in _jwks:
            return _jwks[url]
    response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
    response.raise_for_status()
    keys = response.json()
    with _lock:
        _jwks[url] = keys
    return keys


# --- the backend: token exchange, ID token checks, the person and their roles -------------------

class OIDCBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's backend, with settings read when used (OIDC may be off), the ID
    token's issuer, audience and expiry checked, keys cached, and people found by subject."""

    get_settings = staticmethod(oidc_setting)
    OIDC_RP_IDP_SIGN_KEY = None

    def __init__(self, *args, **kwargs):
        self.UserModel = get_user_model()

    OIDC_OP_TOKEN_ENDPOINT = property(lambda self: oidc_setting("OIDC_OP_TOKEN_ENDPOINT"))
    OIDC_OP_USER_ENDPOINT = property(lambda self: oidc_setting("OIDC_OP_USER_ENDPOINT", ""))
    OIDC_OP_JWKS_ENDPOINT = property(lambda self: oidc_setting("OIDC_OP_JWKS_ENDPOINT"))
    OIDC_RP_CLIENT_ID = property(lambda self: settings.OIDC_RP_CLIENT_ID)
    OIDC_RP_CLIENT_SECRET = property(lambda self: settings.OIDC_RP_CLIENT_SECRET)
    OIDC_RP_SIGN_ALGO = property(lambda self: settings.OIDC_RP_SIGN_ALGO)

    def authenticate(self, request, **kwargs):
        # Only the callback view passes a nonce; a password sign-in is not ours.
        if request is None or not oidc_enabled() or "nonce" not in kwargs:
            return None
        return super().authenticate(request, **kwargs)

    def get_user(self, user_id):
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None

    def retrieve_matching_jwk(self, token):
        header = jwt.get_unverified_header(token)
        for refresh in (False, True):  # a key id we do not know yet: the provider may have rotated
            for jwk in _jwks_fetch(self.OIDC_OP_JWKS_ENDPOINT, refresh=refresh).get("keys", []):
                if jwk.get("kid") == header.get("kid") and jwk.get("alg", header.get("alg")) == header.get("alg"):
                    return jwt.PyJWK(jwk)
        raise OIDCRefused(f"the ID token is signed with a key the provider does not publish "
                          f"(kid {str(header.get('kid'))[:60]!r})")

    def _verify_jws(self, payload, key):
        alg = jwt.get_unverified_header(payload).get("alg")
        if alg != self.OIDC_RP_SIGN_ALGO:
            raise OIDCRefused(f"the ID token is signed with {str(alg)[:20]!r}, not {self.OIDC_RP_SIGN_ALGO}")
        try:
            return jwt.decode(payload, key, algorithms=[alg], audience=self.OIDC_RP_CLIENT_ID, issuer=oidc_issuer(),
                              leeway=settings.OIDC_CLOCK_SKEW_SECONDS,
                              options={"require": ["exp", "iat", "iss", "aud", "sub"]})
        except jwt.ExpiredSignatureError:
            raise OIDCRefused("the ID token has expired") from None
        except jwt.ImmatureSignatureError:
            raise OIDCRefused("the ID token was issued in the future") from None
        except jwt.InvalidSignatureError:
            raise OIDCRefused("the ID token's signature does not verify") from None
        except jwt.InvalidTokenError as exc:
            raise OIDCRefused(f"the ID token is not valid ({exc})") from None

    def verify_token(self, token, **kwargs):
        if not token:
            raise OIDCRefused("the provider returned no ID token")
        nonce = kwargs.get("nonce")
        payload = self.get_payload_data(token, self.retrieve_matching_jwk(token))
        if payload.get("nonce") != nonce:
            raise OIDCRefused("the ID token's nonce is not the one this sign-in sent")
        return payload

    def get_userinfo(self, access_token, id_token, payload):
        """The ID token's claims, completed by the userinfo endpoint's (the ID token, being
        signed, wins where both have a claim)."""
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT and access_token:
            info = super().get_userinfo(access_token, id_token, payload)
            if info.get("sub") != payload.get("sub"):
                raise OIDCRefused("the userinfo endpoint answered about another person")
            for name, value in info.items():
                claims.setdefault(name, value)
        return claims

    def get_or_create_user(self, access_token, id_token, payload):
        claims = self.get_userinfo(access_token, id_token, payload)
        ip = self.request.META.get("REMOTE_ADDR", "") if self.request else ""
        user, refusal = oidc_user_sign_in(claims=claims, issuer=oidc_issuer(), ip=ip)
        if refusal:
            raise OIDCRefused(refusal, username=user.get_username() if user else _username(claims))
        return user


def _groups(claims: dict) -> list[str] | None:
    value = claims.get(settings.OIDC_GROUPS_CLAIM)
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    return [g for g in value if isinstance(g, str)] if isinstance(value, list) else []


def _username(claims: dict) -> str:
    return str(claims.get(settings.OIDC_USERNAME_CLAIM) or claims.get("email") or claims.get("sub") or "")[:150]


@transaction.atomic
def oidc_user_sign_in(*, claims: dict, issuer: str, ip: str = "") -> tuple[User | None, str]:
    """The person these verified claims describe, created or updated, with their roles set
    from their groups; or the reason they may not sign in. A refused person already known
    keeps no role (committed: the refusal is not rolled back)."""
    subject = str(claims.get("sub") or "")
    username = _username(claims)
    if not subject:
        return None, "the ID token names no subject"
    account = ExternalAccount.objects.select_related("user").filter(oidc_issuer=issuer, oidc_subject=subject).first()
    user = account.user if account else None
    if user is None:
        # userName is not case-sensitive in SCIM, nor at most providers.
        user = User.objects.filter(username__iexact=username).order_by("pk").first()
        if user is not None:
            account = ExternalAccount.objects.filter(user=user).first()
            # Only a person SCIM provisioned and nobody signed in as yet is taken over by name:
            # a local account (a break-glass admin) never is.
            if account is None or account.source != ExternalAccount.Source.SCIM or account.oidc_subject:
                return None, f"the username {username!r} belongs to an account the provider does not manage"
            account.oidc_issuer, account.oidc_subject = issuer, subject
            account.save(update_fields=["oidc_issuer", "oidc_subject", "updated_at"])
    groups = _groups(claims)
    if groups is None and user is not None:
        groups = list(user.scim_groups.values_list("display_name", flat=True))  # a provider without the claim
    roles = roles_for_groups(groups or [])
    if user is not None and not user.is_active:
        return user, "the account is deactivated"
    if not roles:
        if user is not None:
            user_roles_set(actor=ACTOR, user=user, roles=set(), source="oidc")
            user_teams_sync(actor=ACTOR, user=user, groups=groups or [], source="oidc")
            ExternalAccount.objects.filter(user=user).update(groups=groups or [])
        return user, f"{username} is in no group that gives a Casework role"
    names = {"email": str(claims.get("email") or "")[:254], "first_name": str(claims.get("given_name") or "")[:150],
             "last_name": str(claims.get("family_name") or "")[:150]}
    if not names["first_name"] and claims.get("name"):
        names["first_name"] = str(claims["name"])[:150]
    if user is None:
        user = User(username=username, **names)
        user.set_unusable_password()
        try:
            user.full_clean()
        except ValidationError as exc:
            return None, f"the {settings.OIDC_USERNAME_CLAIM} claim is not a usable username ({'; '.join(exc.messages)})"
        user.save()
        ExternalAccount.objects.create(user=user, source=ExternalAccount.Source.OIDC, oidc_issuer=issuer,
                                       oidc_subject=subject, groups=groups or [])
        audit_record(actor=ACTOR, action="user.created", obj=user,
                     data={"username": username, "source": "oidc", "issuer": issuer, "ip": ip})
    else:
        changed = [f for f, v in names.items() if v and getattr(user, f) != v]
        for field in changed:
            setattr(user, field, names[field])
        if changed:
            user.save(update_fields=changed)
        ExternalAccount.objects.filter(user=user).update(groups=groups or [])
    user_roles_set(actor=ACTOR, user=user, roles=roles, source="oidc")
    user_teams_sync(actor=ACTOR, user=user, groups=groups or [], source="oidc")
    return user, ""


# --- the views: start, callback, logout ---------------------------------------------------------

def _authorization_redirect(request, *, next_url: str | None, prompt: str | None = None) -> str:
    """Where to send the browser to sign in (or, with prompt=none, to renew silently)."""
    state = get_random_string(32)
    params = {
        "response_type": "code",
        "scope": settings.OIDC_RP_SCOPES,
        "client_id": settings.OIDC_RP_CLIENT_ID,
        "redirect_uri": absolutify(request, reverse("oidc_authentication_callback")),
        "state": state,
        "nonce": get_random_string(32),
    }
    if prompt:
        params["prompt"] = prompt
    verifier = get_random_string(64)
    params.update(code_challenge=generate_code_challenge(verifier, "S256"), code_challenge_method="S256")
    add_state_and_verifier_and_nonce_to_session(request, state, params, verifier)
    request.session["oidc_login_next"] = next_url
    return f"{oidc_setting('OIDC_OP_AUTHORIZATION_ENDPOINT')}?{urlencode(params)}"


def _unavailable(request, exc: Exception):
    logger.warning("The identity provider could not be reached: %s", exc)
    messages.error(request, f"{settings.OIDC_PROVIDER_NAME} cannot be reached just now; try again in a minute.")
    return redirect("login")


@method_decorator(login_not_required, name="dispatch")
class OIDCStartView(View):
    http_method_names = ["get"]

    def get(self, request):
        if not oidc_enabled():
            raise Http404("Sign-in through an identity provider is not configured.")
        try:
            return HttpResponseRedirect(_authorization_redirect(request, next_url=get_next_url(request, "next")))
        except (requests.RequestException, ValueError) as exc:
            return _unavailable(request, exc)


@method_decorator(login_not_required, name="dispatch")
class OIDCCallbackView(OIDCAuthenticationCallbackView):
    get_settings = staticmethod(oidc_setting)

    def get(self, request):
        if not oidc_enabled():
            raise Http404("Sign-in through an identity provider is not configured.")
        states = request.session.get("oidc_states") or {}
        state = request.GET.get("state", "")
        # Only a renewal starts while signed in (OIDCSessionRefresh); refuse() signs out.
        started_next = request.session.get("oidc_login_next") if request.user.is_authenticated else None
        if request.GET.get("error"):
            if states.pop(state, None) is not None:
                request.session["oidc_states"] = states
            error = request.GET["error"][:60]
            response = self.refuse(f"the provider answered {error!r}")
            if error in ("login_required", "interaction_required", "consent_required") and started_next:
                # A silent renewal the provider cannot answer without the person (their session
                # there ended): sign in again, interactively, and come back to the same page.
                return redirect(f"{reverse('oidc_authentication_init')}?{urlencode({'next': started_next})}")
            return response
        if not request.GET.get("code") or not state:
            return self.refuse("the provider's answer has no code or no state")
        if state not in states:
            return self.refuse("its state is not one this browser's sign-in started (forged or replayed)")
        started = states.pop(state)
        request.session["oidc_states"] = states
        request.session.save()
        try:
            self.user = auth.authenticate(request=request, nonce=started.get("nonce"),
                                          code_verifier=started.get("code_verifier"))
        except OIDCRefused as exc:
            return self.refuse(exc.reason, username=exc.username)
        except requests.RequestException as exc:
            logger.warning("OIDC token exchange failed: %s", exc.__class__.__name__)
            return self.refuse("the provider did not accept the sign-in code")
        except IntegrityError:
            return self.refuse("another sign-in of the same person was being saved; try again")
        if self.user is None:
            return self.refuse("no account could be signed in")
        return self.login_success()

    def refuse(self, reason: str, *, username: str = ""):
        request = self.request
        audit_record(actor=request.user if request.user.is_authenticated else "system", action="auth.oidc_refused",
                     data={"reason": reason, "username": username, "ip": request.META.get("REMOTE_ADDR", "")})
        if request.user.is_authenticated:
            auth.logout(request)
        messages.error(request, f"Sign-in through {settings.OIDC_PROVIDER_NAME} was refused: {reason}.")
        return redirect("login")


def provider_logout_url(request) -> str:
    """RP-initiated logout: the provider's end_session_endpoint with the ID token as hint, when
    the provider has one and this session came from it; else our own logged-out page."""
    id_token = request.session.get("oidc_id_token")
    try:
        endpoint = oidc_setting("OIDC_OP_END_SESSION_ENDPOINT", "") if oidc_enabled() and id_token else ""
    except requests.RequestException:
        endpoint = ""
    if not endpoint:
        return resolve_url(settings.LOGOUT_REDIRECT_URL)
    params = {"id_token_hint": id_token, "client_id": settings.OIDC_RP_CLIENT_ID,
              "post_logout_redirect_uri": absolutify(request, resolve_url(settings.LOGOUT_REDIRECT_URL))}
    return f"{endpoint}?{urlencode(params)}"


def _provider_origin() -> str:
    """The origin of the provider's end_session_endpoint: set, or already discovered, or the issuer's
    (never a network call: this runs for every response)."""
    from urllib.parse import urlsplit

    url = settings.OIDC_OP_END_SESSION_ENDPOINT
    if not url:
        with _lock:
            discovered = _metadata.get(_discovery_url(), {})
        url = discovered.get("end_session_endpoint") or settings.OIDC_ISSUER or settings.OIDC_DISCOVERY_URL
    parts = urlsplit(url or "")
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


# --- session refresh -------------------------------------------------------------------------------

class OIDCSessionRefresh:
    """Once a sign-in through the provider is older than OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS,
    the next request goes back to the provider with prompt=none: it answers at once while the
    person's session there lasts, and the callback sets their roles again from their groups (or
    refuses them, and signs them out). A page load comes back to the same page; a form post does
    not run (it is sent to renew first, then to the page it came from); an htmx request gets
    nothing and the page offers to renew; the API answers 403 with the URL to renew at."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.check(request)
        if response is None:
            response = self.get_response(request)
        if oidc_enabled():
            # The logout form's answer redirects to the provider (RP-initiated logout), which
            # the browser checks against the page's form-action.
            origin = _provider_origin()
            if origin:
                response._csp_update = {**(getattr(response, "_csp_update", None) or {}), "form-action": [origin]}
                response._csp_update_ro = {**(getattr(response, "_csp_update_ro", None) or {}),
                                           "form-action": [origin]}
        return response

    def check(self, request):
        if not oidc_enabled() or not request.user.is_authenticated:
            return None
        backend = request.session.get(auth.BACKEND_SESSION_KEY, "")
        if not backend.endswith(".OIDCBackend"):
            return None
        if request.path in {reverse("oidc_authentication_init"), reverse("oidc_authentication_callback"),
                            reverse("logout")}:
            return None
        import time

        if request.session.get("oidc_id_token_expiration", 0) > time.time():
            return None
        if request.headers.get("HX-Request"):
            # A fragment (often a poll): nothing is served, nothing is swapped, and the page
            # shows a "Renew your sign-in" banner (static/js/casework.js) instead of navigating
            # away from what the person is typing. The link renews and comes back to the page.
            page = request.headers.get("HX-Current-URL", "")
            if not url_has_allowed_host_and_scheme(page, allowed_hosts={request.get_host()},
                                                   require_https=request.is_secure()):
                page = reverse("home")
            renew = f"{reverse('oidc_authentication_init')}?{urlencode({'next': _path(page)})}"
            response = HttpResponse(status=200)
            response["HX-Reswap"] = "none"
            response["HX-Trigger"] = json.dumps({"casework:renew-sign-in": {"url": renew}})
            return response
        if request.method == "GET":
            next_url = request.get_full_path()
        else:
            # A form post does not run: back to the page it came from, once renewed.
            next_url = request.headers.get("Referer") or ""
            if not url_has_allowed_host_and_scheme(next_url, allowed_hosts={request.get_host()},
                                                   require_https=request.is_secure()):
                next_url = reverse("home")
            next_url = _path(next_url)
        try:
            url = _authorization_redirect(request, next_url=next_url, prompt="none")
        except (requests.RequestException, ValueError) as exc:
            logger.warning("OIDC session refresh: the provider cannot be reached (%s)", exc.__class__.__name__)
            return None  # the provider is down: the sign-in stands until it is back
        if request.path_info.startswith("/api/"):
            return JsonResponse({"detail": "Your sign-in must be renewed with the identity provider.",
                                 "refresh_url": url}, status=403)
        return HttpResponseRedirect(url)


def _path(url: str) -> str:
    """The path and query of a same-site URL (already checked)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
