"""SCIM 2.0 provisioning (RFC 7643/7644): the identity provider creates, updates and
deactivates people and groups before anyone signs in.

/scim/v2/Users and /scim/v2/Groups, with `Authorization: Bearer <SCIM_TOKEN>`; 404 everywhere
while SCIM_TOKEN is empty. The provider sees only the people it manages (provisioned here, or
signed in through it): a local account (a break-glass admin) is invisible to it and its
userName cannot be taken. Deactivating (active=false, or DELETE) is user_deactivate: sessions
ended, API tokens revoked, open cases back to the queue, in one audited step. A group's
displayName gives its members a role through OIDC_GROUP_ROLES, as the groups claim does.

Attributes Casework does not keep (title, department, the enterprise extension ...) are
accepted and ignored, as Entra ID and Okta send them whatever the application supports.
"""

from __future__ import annotations

import hmac
import re

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import Http404
from django.urls import reverse
from rest_framework import exceptions, status
from rest_framework.authentication import BaseAuthentication
from rest_framework.parsers import JSONParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from audit.services import audit_record
from casework.people.models import ExternalAccount, ScimGroup
from casework.people.services import roles_for_groups, user_deactivate, user_reactivate, user_roles_set
from casework.people.teams import user_teams_sync

ACTOR = "scim"
USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"
PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
MAX_COUNT = 200


class ScimError(Exception):
    def __init__(self, detail: str, *, status_code: int = 400, scim_type: str = "invalidValue"):
        super().__init__(detail)
        self.detail, self.status_code, self.scim_type = detail, status_code, scim_type


# --- services -----------------------------------------------------------------------------------

def managed_users():
    return User.objects.filter(external_account__isnull=False).select_related("external_account")


def _bool(value, field: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"  # Entra ID sends "True" / "False"
    raise ScimError(f"{field}: expected true or false, not {value!r}.")


def _str(value, field: str, max_length: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ScimError(f"{field}: expected a string.")
    if len(value) > max_length:
        raise ScimError(f"{field}: at most {max_length} characters.")
    return value


def _primary_email(emails) -> str | None:
    if emails is None:
        return None
    if not isinstance(emails, list) or not all(isinstance(e, dict) for e in emails):
        raise ScimError("emails: expected a list of {value, type, primary}.")
    chosen = next((e for e in emails if e.get("primary") in (True, "true", "True")), emails[0] if emails else None)
    return _str(chosen.get("value"), "emails.value", 254) if chosen else ""


def user_fields(data: dict) -> dict:
    """What a SCIM User representation says about the fields Casework keeps."""
    if not isinstance(data, dict):
        raise ScimError("The body must be a JSON object.")
    fields: dict = {}
    if "userName" in data:
        fields["username"] = _str(data["userName"], "userName", 150)
    name = data.get("name")
    if name is not None:
        if not isinstance(name, dict):
            raise ScimError("name: expected an object.")
        if "givenName" in name:
            fields["first_name"] = _str(name["givenName"], "name.givenName", 150)
        if "familyName" in name:
            fields["last_name"] = _str(name["familyName"], "name.familyName", 150)
    email = _primary_email(data.get("emails"))
    if email is not None:
        fields["email"] = email
    if "externalId" in data:
        fields["external_id"] = _str(data["externalId"], "externalId", 255)
    if "active" in data:
        fields["active"] = _bool(data["active"], "active")
    return fields


def _save_user(user: User) -> None:
    try:
        user.full_clean(exclude=["password"])
    except ValidationError as exc:
        field = next(iter(exc.message_dict), "")
        scim_name = {"username": "userName", "email": "emails", "first_name": "name.givenName",
                     "last_name": "name.familyName"}.get(field, field)
        if field == "username" and any("already exists" in m for m in exc.message_dict[field]):
            raise ScimError(f"userName: {user.username!r} is taken.", status_code=409, scim_type="uniqueness")
        raise ScimError(f"{scim_name}: {' '.join(exc.message_dict[field])}")
    user.save()


@transaction.atomic
def scim_user_create(data: dict) -> User:
    fields = user_fields(data)
    if not fields.get("username"):
        raise ScimError("userName: required.")
    if User.objects.filter(username__iexact=fields["username"]).exists():
        raise ScimError(f"userName: {fields['username']!r} is taken.", status_code=409, scim_type="uniqueness")
    user = User(username=fields["username"], email=fields.get("email", ""), first_name=fields.get("first_name", ""),
                last_name=fields.get("last_name", ""), is_active=fields.get("active", True))
    user.set_unusable_password()
    _save_user(user)
    ExternalAccount.objects.create(user=user, source=ExternalAccount.Source.SCIM,
                                   scim_external_id=fields.get("external_id", ""))
    audit_record(actor=ACTOR, action="user.created", obj=user, data={
        "username": user.username, "source": "scim", "active": user.is_active,
        "external_id": fields.get("external_id", "")})
    return user


@transaction.atomic
def scim_user_update(user: User, fields: dict) -> User:
    """Apply changed fields; `active` goes through user_deactivate / user_reactivate."""
    user = User.objects.select_for_update().get(pk=user.pk)
    account = ExternalAccount.objects.get(user=user)
    changes = {}
    for field in ("username", "first_name", "last_name", "email"):
        if field in fields and getattr(user, field) != fields[field]:
            if field == "username" and not fields[field]:
                raise ScimError("userName: required.")
            changes[field] = [getattr(user, field), fields[field]]
            setattr(user, field, fields[field])
    if changes:
        if "username" in changes and User.objects.filter(username__iexact=user.username).exclude(pk=user.pk).exists():
            raise ScimError(f"userName: {user.username!r} is taken.", status_code=409, scim_type="uniqueness")
        _save_user(user)
    if "external_id" in fields and account.scim_external_id != fields["external_id"]:
        changes["external_id"] = [account.scim_external_id, fields["external_id"]]
        account.scim_external_id = fields["external_id"]
        account.save(update_fields=["scim_external_id", "updated_at"])
    if changes:
        audit_record(actor=ACTOR, action="user.updated", obj=user, data={"username": user.username, "changes": changes})
    if fields.get("active") is False and user.is_active:
        user_deactivate(actor=ACTOR, user=user, reason="deactivated by the identity provider (SCIM)")
    elif fields.get("active") is True and not user.is_active:
        user_reactivate(actor=ACTOR, user=user)
    user.refresh_from_db()
    return user


@transaction.atomic
def scim_user_delete(user: User) -> None:
    """SCIM DELETE: the person loses access as at deactivation, and the provider no longer
    sees them; the account stays, inactive, for the cases and the audit trail that name it."""
    user_deactivate(actor=ACTOR, user=user, reason="deleted by the identity provider (SCIM)")
    user.scim_groups.clear()
    user_roles_set(actor=ACTOR, user=user, roles=set(), source="scim")
    user_teams_sync(actor=ACTOR, user=user, groups=[], source="scim")
    ExternalAccount.objects.filter(user=user).delete()
    audit_record(actor=ACTOR, action="user.deprovisioned", obj=user, data={"username": user.username})


def _sync_roles(users) -> None:
    for user in users:
        names = list(user.scim_groups.values_list("display_name", flat=True))
        ExternalAccount.objects.filter(user=user).update(groups=names)
        user_roles_set(actor=ACTOR, user=user, roles=roles_for_groups(names), source="scim")
        user_teams_sync(actor=ACTOR, user=user, groups=names, source="scim")


def _member_ids(members) -> set[int]:
    if not isinstance(members, list):
        raise ScimError("members: expected a list of {value}.")
    ids = set()
    for member in members:
        value = member.get("value") if isinstance(member, dict) else None
        if not isinstance(value, str | int) or not str(value).isdecimal():
            raise ScimError(f"members: {value!r} is not a user id.")
        ids.add(int(value))
    found = set(managed_users().filter(pk__in=ids).values_list("pk", flat=True))
    if ids - found:
        raise ScimError(f"members: no user {sorted(ids - found)[0]}.", scim_type="invalidValue")
    return ids


@transaction.atomic
def scim_group_save(group: ScimGroup | None, *, display_name: str | None, external_id: str | None = None,
                    add: set[int] = frozenset(), remove: set[int] = frozenset(), replace: set[int] | None = None
                    ) -> ScimGroup:
    created = group is None
    if created:
        if not display_name:
            raise ScimError("displayName: required.")
        if ScimGroup.objects.filter(display_name=display_name).exists():
            raise ScimError(f"displayName: {display_name!r} exists.", status_code=409, scim_type="uniqueness")
        group = ScimGroup.objects.create(display_name=display_name, external_id=external_id or "")
    else:
        group = ScimGroup.objects.select_for_update().get(pk=group.pk)
    before_name, before = group.display_name, set(group.members.values_list("pk", flat=True))
    if display_name and display_name != group.display_name:
        if ScimGroup.objects.filter(display_name=display_name).exclude(pk=group.pk).exists():
            raise ScimError(f"displayName: {display_name!r} exists.", status_code=409, scim_type="uniqueness")
        group.display_name = display_name
    if external_id is not None:
        group.external_id = external_id
    group.save()
    after = set(replace) if replace is not None else (before | set(add)) - set(remove)
    group.members.remove(*(before - after))
    group.members.add(*(after - before))
    renamed = before_name != group.display_name
    audit_record(actor=ACTOR, action="scim_group.created" if created else "scim_group.changed", obj=group, data={
        "group": group.display_name, "renamed_from": before_name if renamed and not created else None,
        "added": sorted(after - before), "removed": sorted(before - after)})
    affected = (before ^ after) | (after if renamed else set())
    _sync_roles(User.objects.filter(pk__in=affected))
    return group


@transaction.atomic
def scim_group_delete(group: ScimGroup) -> None:
    members = list(group.members.all())
    audit_record(actor=ACTOR, action="scim_group.deleted", obj=group,
                 data={"group": group.display_name, "members": [m.pk for m in members]})
    group.delete()
    _sync_roles(members)


# --- representations ---------------------------------------------------------------------------------

def _meta(request, kind: str, pk: int, created, modified) -> dict:
    path = reverse("scim:user" if kind == "User" else "scim:group", args=[pk])
    return {"resourceType": kind, "created": created.isoformat(), "lastModified": modified.isoformat(),
            "location": request.build_absolute_uri(path)}


def user_representation(request, user: User) -> dict:
    account = user.external_account
    return {
        "schemas": [USER_SCHEMA], "id": str(user.pk), "externalId": account.scim_external_id or None,
        "userName": user.username,
        "name": {"givenName": user.first_name, "familyName": user.last_name},
        "displayName": user.get_full_name() or user.username,
        "emails": [{"value": user.email, "type": "work", "primary": True}] if user.email else [],
        "active": user.is_active,
        "groups": [{"value": str(g.pk), "display": g.display_name} for g in user.scim_groups.all()],
        "meta": _meta(request, "User", user.pk, user.date_joined, account.updated_at),
    }


def group_representation(request, group: ScimGroup, *, members: bool = True) -> dict:
    body = {"schemas": [GROUP_SCHEMA], "id": str(group.pk), "externalId": group.external_id or None,
            "displayName": group.display_name,
            "meta": _meta(request, "Group", group.pk, group.created_at, group.updated_at)}
    if members:
        body["members"] = [{"value": str(u.pk), "display": u.username} for u in group.members.all()]
    return body


# --- the HTTP surface ----------------------------------------------------------------------------------

class ScimClient:
    """Who is calling: the identity provider's provisioning client (not a person)."""

    is_authenticated = True
    pk = None
    username = ACTOR

    def __str__(self) -> str:
        return ACTOR


class ScimTokenAuthentication(BaseAuthentication):
    def authenticate(self, request):
        header = request.headers.get("Authorization", "")
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != "bearer" or not secret:
            return None
        if not hmac.compare_digest(secret.strip().encode(), settings.SCIM_TOKEN.encode()):
            raise exceptions.AuthenticationFailed("Invalid SCIM token.")
        return ScimClient(), None

    def authenticate_header(self, request):
        return 'Bearer realm="scim"'


class ScimJSONParser(JSONParser):
    media_type = "application/scim+json"


class ScimJSONRenderer(JSONRenderer):
    media_type = "application/scim+json"


class ScimView(APIView):
    authentication_classes = [ScimTokenAuthentication]
    permission_classes = [IsAuthenticated]
    parser_classes = [ScimJSONParser, JSONParser]
    renderer_classes = [ScimJSONRenderer, JSONRenderer]
    throttle_classes: list = []  # the provider provisions in bursts; the token is long and random
    schema = None  # not part of the REST API's OpenAPI document

    @classmethod
    def as_view(cls, **initkwargs):
        return login_not_required(super().as_view(**initkwargs))

    def initial(self, request, *args, **kwargs):
        if not settings.SCIM_TOKEN:
            raise Http404
        super().initial(request, *args, **kwargs)

    def handle_exception(self, exc):
        if isinstance(exc, ScimError):
            return _error(exc.detail, exc.status_code, exc.scim_type)
        if isinstance(exc, Http404 | exceptions.NotFound):
            return _error("Not found.", 404)
        if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
            response = _error(str(exc.detail), 401)
            response["WWW-Authenticate"] = 'Bearer realm="scim"'
            return response
        if isinstance(exc, exceptions.ParseError):
            return _error(f"The body is not JSON: {exc.detail}", 400, "invalidSyntax")
        if isinstance(exc, exceptions.APIException):
            return _error(str(exc.detail), exc.status_code)
        raise exc

    def page(self, request) -> tuple[int, int]:
        try:
            start = max(1, int(request.query_params.get("startIndex", 1)))
            count = min(MAX_COUNT, max(0, int(request.query_params.get("count", 100))))
        except ValueError:
            raise ScimError("startIndex and count are integers.") from None
        return start, count

    def list_response(self, request, queryset, represent) -> Response:
        start, count = self.page(request)
        total = queryset.count()
        rows = queryset[start - 1:start - 1 + count]
        return Response({"schemas": [LIST_SCHEMA], "totalResults": total, "startIndex": start,
                         "itemsPerPage": len(rows), "Resources": [represent(request, r) for r in rows]})


def _error(detail: str, status_code: int, scim_type: str | None = None) -> Response:
    body = {"schemas": [ERROR_SCHEMA], "status": str(status_code), "detail": detail}
    if scim_type and status_code in (400, 409):
        body["scimType"] = scim_type
    return Response(body, status=status_code)


_FILTER = re.compile(r'^\s*(\w+(?:\.\w+)?)\s+eq\s+"((?:[^"\\]|\\.)*)"\s*$', re.IGNORECASE)


def _filter(request, allowed: dict[str, str]) -> dict:
    """`attribute eq "value"`, the one filter the providers send to look someone up."""
    expression = request.query_params.get("filter")
    if not expression:
        return {}
    match = _FILTER.match(expression)
    if not match or match.group(1).lower() not in {a.lower() for a in allowed}:
        supported = " or ".join(f'{a} eq "..."' for a in allowed)
        raise ScimError(f"filter: only {supported} is supported.", scim_type="invalidFilter")
    attribute = next(a for a in allowed if a.lower() == match.group(1).lower())
    return {allowed[attribute]: match.group(2).replace('\\"', '"')}


def _patch_operations(data) -> list[tuple[str, str, object]]:
    if not isinstance(data, dict) or not isinstance(data.get("Operations"), list):
        raise ScimError("Operations: a PatchOp body has a list of Operations.", scim_type="invalidSyntax")
    operations = []
    for op in data["Operations"]:
        if not isinstance(op, dict) or str(op.get("op", "")).lower() not in ("add", "replace", "remove"):
            raise ScimError("Operations: each has op add, replace or remove.", scim_type="invalidSyntax")
        operations.append((op["op"].lower(), str(op.get("path") or ""), op.get("value")))
    return operations


_USER_PATHS = {"active": "active", "username": "userName", "externalid": "externalId",
               "name.givenname": "name.givenName", "name.familyname": "name.familyName",
               'emails[type eq "work"].value': "emails", "emails": "emails"}


def user_patch_fields(data) -> dict:
    """The fields a PatchOp body sets on a User (Entra ID sends paths, Okta a value object)."""
    body: dict = {}
    for op, path, value in _patch_operations(data):
        if op == "remove":
            continue  # nothing Casework keeps may be removed
        if not path:
            if not isinstance(value, dict):
                raise ScimError("Operations: an operation without a path takes an object value.")
            for key, item in value.items():
                _set_path(body, _USER_PATHS.get(key.lower(), key), item)
        else:
            _set_path(body, _USER_PATHS.get(path.lower(), path), value)
    return user_fields(body)


def _set_path(body: dict, path: str, value) -> None:
    if path.startswith("name."):
        body.setdefault("name", {})[path[5:]] = value
    elif path == "emails":
        body["emails"] = value if isinstance(value, list) else [{"value": value, "primary": True}]
    elif path == "name" and isinstance(value, dict):
        body.setdefault("name", {}).update(value)
    else:
        body[path] = value


class UsersView(ScimView):
    def get(self, request):
        # userName is caseExact=false (RFC 7643 4.1.1).
        found = _filter(request, {"userName": "username__iexact", "externalId": "external_account__scim_external_id"})
        return self.list_response(request, managed_users().filter(**found).order_by("pk"), user_representation)

    def post(self, request):
        user = scim_user_create(request.data)
        return Response(user_representation(request, user), status=status.HTTP_201_CREATED,
                        headers={"Location": user_representation(request, user)["meta"]["location"]})


class UserView(ScimView):
    def user(self, pk) -> User:
        user = managed_users().filter(pk=pk).first()
        if user is None:
            raise Http404
        return user

    def get(self, request, pk):
        return Response(user_representation(request, self.user(pk)))

    def put(self, request, pk):
        fields = user_fields(request.data)
        if not fields.get("username"):
            raise ScimError("userName: required.")
        fields.setdefault("active", True)
        for field in ("first_name", "last_name", "email", "external_id"):
            fields.setdefault(field, "")  # a replacement: what it leaves out is cleared
        return Response(user_representation(request, scim_user_update(self.user(pk), fields)))

    def patch(self, request, pk):
        return Response(user_representation(request, scim_user_update(self.user(pk), user_patch_fields(request.data))))

    def delete(self, request, pk):
        scim_user_delete(self.user(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class GroupsView(ScimView):
    def get(self, request):
        found = _filter(request, {"displayName": "display_name", "externalId": "external_id"})
        excluded = "members" in request.query_params.get("excludedAttributes", "")
        return self.list_response(request, ScimGroup.objects.filter(**found).order_by("pk"),
                                  lambda req, g: group_representation(req, g, members=not excluded))

    def post(self, request):
        data = request.data if isinstance(request.data, dict) else {}
        group = scim_group_save(None, display_name=_str(data.get("displayName"), "displayName", 255),
                                external_id=_str(data.get("externalId"), "externalId", 255),
                                replace=_member_ids(data.get("members") or []))
        body = group_representation(request, group)
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": body["meta"]["location"]})


class GroupView(ScimView):
    def group(self, pk) -> ScimGroup:
        group = ScimGroup.objects.filter(pk=pk).first()
        if group is None:
            raise Http404
        return group

    def get(self, request, pk):
        return Response(group_representation(request, self.group(pk)))

    def put(self, request, pk):
        data = request.data if isinstance(request.data, dict) else {}
        group = scim_group_save(self.group(pk), display_name=_str(data.get("displayName"), "displayName", 255),
                                external_id=_str(data.get("externalId"), "externalId", 255),
                                replace=_member_ids(data.get("members") or []))
        return Response(group_representation(request, group))

    def patch(self, request, pk):
        add, remove, replace, display_name = set(), set(), None, None
        for op, path, value in _patch_operations(request.data):
            # Without a path the value is an object of attributes (Okta); with one, the attribute's value.
            changes = value if not path and isinstance(value, dict) else {path: value} if path else {}
            for name, item in changes.items():
                lowered = name.lower()
                if lowered == "displayname":
                    display_name = _str(item, "displayName", 255)
                elif lowered == "members":
                    members = _member_ids(item) if item is not None else set()
                    if op == "add":
                        add |= members
                    elif op == "remove":
                        remove |= members
                    else:
                        replace = members
                elif lowered.startswith("members[value eq") and op == "remove":  # Entra ID: one member by filter
                    match = re.search(r'"(\d+)"', name)
                    if match:
                        remove.add(int(match.group(1)))
        group = scim_group_save(self.group(pk), display_name=display_name, add=add, remove=remove, replace=replace)
        return Response(group_representation(request, group))

    def delete(self, request, pk):
        scim_group_delete(self.group(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ServiceProviderConfigView(ScimView):
    def get(self, request):
        return Response({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
            "patch": {"supported": True}, "bulk": {"supported": False, "maxOperations": 0, "maxPayloadSize": 0},
            "filter": {"supported": True, "maxResults": MAX_COUNT}, "changePassword": {"supported": False},
            "sort": {"supported": False}, "etag": {"supported": False},
            "authenticationSchemes": [{"type": "oauthbearertoken", "name": "Bearer token",
                                       "description": "Authorization: Bearer <SCIM_TOKEN>", "primary": True}],
        })
