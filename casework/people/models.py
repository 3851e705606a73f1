"""Who a person is at the organisation's identity provider, and the groups it provisions.

A person signs in through OpenID Connect as (issuer, subject); the provider's SCIM client
knows them by its own id (externalId) and by userName. One row links those to the Django user.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class ExternalAccount(models.Model):
    class Source(models.TextChoices):
        OIDC = "oidc", "Signed in through the identity provider"
        SCIM = "scim", "Provisioned by the identity provider (SCIM)"

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="external_account")
    source = models.CharField(max_length=10, choices=Source.choices)
    oidc_issuer = models.CharField(max_length=500, blank=True)
    oidc_subject = models.CharField(max_length=255, blank=True)
    scim_external_id = models.CharField(max_length=255, blank=True)
    # The provider's groups as last seen (ID token claim or SCIM membership).
    groups = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["oidc_issuer", "oidc_subject"], condition=~Q(oidc_subject=""),
                                    name="external_account_oidc_unique"),
            models.CheckConstraint(condition=Q(source__in=["oidc", "scim"]), name="external_account_source_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.source})"


class ScimGroup(models.Model):
    """A group the provider pushed over SCIM; OIDC_GROUP_ROLES maps its name to a role."""

    display_name = models.CharField(max_length=255, unique=True)
    external_id = models.CharField(max_length=255, blank=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="scim_groups", blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["display_name"]

    def __str__(self) -> str:
        return self.display_name


class Team(models.Model):
    """A team owns case types (the fraud team FRA- and TXN-): its members see and work those
    cases, and nobody else does (casework/cases/visibility.py). Members come from the identity
    provider's groups (`sso_groups` / `sso_lead_groups`, through OIDC's groups claim and SCIM
    groups) or are added by hand in the admin."""

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=50, unique=True)
    # Case type keys (casework.cases.types.CASE_TYPES), e.g. ["fraud", "transactions"].
    case_types = models.JSONField(default=list, blank=True)
    # The provider's groups whose members are this team's members / leads.
    sso_groups = models.JSONField(default=list, blank=True)
    sso_lead_groups = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class TeamMembership(models.Model):
    class Role(models.TextChoices):
        MEMBER = "member", "Member"
        LEAD = "lead", "Lead"

    class Source(models.TextChoices):
        MANUAL = "manual", "Added in Casework"
        SSO = "sso", "From the identity provider's groups"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    # A membership from the provider's groups follows them (renewed at each sign-in and SCIM
    # change); one added by hand stays until someone removes it.
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.MANUAL)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["team__name", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="team_membership_unique"),
            models.CheckConstraint(condition=Q(role__in=["member", "lead"]), name="team_membership_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"
