"""Allow and deny lists of values (cards, e-mail hashes, IPs, devices, merchants, BINs).

A ValueList is named ("deny-devices"), holds values of one field and is of one kind:

- deny: a transaction whose value is on it is blocked at once, before any rule runs
  (casework/transactions/decisions/engine.py); its card's case opens or joins for a person;
- allow: a transaction whose value is on it skips the review rules (no friction for a known
  customer), but a deny list or a live block rule still blocks it. A list entry is one
  person's word, so it never overrides a block rule that two people approved.

Rules can also test membership ({"in_list": "deny-devices", "field": "device"}). Entries have
an optional expiry: an expired entry does not match. Every change goes through
casework/transactions/lists/services.py, which audits it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class ValueList(models.Model):
    class Kind(models.TextChoices):
        ALLOW = "allow", "Allow list"
        DENY = "deny", "Deny list"

    class Field(models.TextChoices):
        CARD = "card", "Card (card account id)"
        EMAIL_HASH = "email_hash", "E-mail hash (SHA-256 of the lower-cased address)"
        IP = "ip", "IP address"
        DEVICE = "device", "Device id"
        MERCHANT = "merchant", "Merchant id"
        BIN = "bin", "BIN (first 6 to 8 digits)"

    name = models.SlugField(max_length=60, unique=True)
    kind = models.CharField(max_length=5, choices=Kind.choices)
    field = models.CharField(max_length=10, choices=Field.choices)
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+")
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=["allow", "deny"]), name="txn_list_kind_valid"),
            models.CheckConstraint(condition=Q(field__in=["card", "email_hash", "ip", "device", "merchant", "bin"]),
                                   name="txn_list_field_valid"),
        ]

    def __str__(self) -> str:
        return self.name


class ListEntry(models.Model):
    value_list = models.ForeignKey(ValueList, on_delete=models.CASCADE, related_name="entries")
    # The unique constraint's index is the membership lookup: (list, value) -> one row.
    value = models.CharField(max_length=128)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Empty: never expires.")
    note = models.CharField(max_length=500, blank=True)
    added_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                 related_name="+")
    added_at = models.DateTimeField()

    class Meta:
        ordering = ["value_list", "value"]
        verbose_name_plural = "list entries"
        constraints = [models.UniqueConstraint(fields=["value_list", "value"], name="txn_list_entry_unique")]
        # Deny and allow lists are read by field for every decision: (field-kind lists) x value.
        indexes = [models.Index(fields=["value", "value_list"], name="txn_list_entry_value")]

    def __str__(self) -> str:
        return f"{self.value_list.name}: {self.value}"

    def active_at(self, now) -> bool:
        return self.expires_at is None or self.expires_at > now
