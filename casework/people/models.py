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
