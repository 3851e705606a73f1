"""Entities seen across cases, the mentions that tie them to cases, and the links and merges
people make between cases."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from casework.entities.kinds import KINDS, VALUE_MAX, kind_choices


class Entity(models.Model):
    """One account, card, customer, person ... with its normalised value (casework.entities.kinds:
    an email's keyed hash, a card's BIN and last four) and how people see it."""

    # One of the registered kinds (casework.entities.kinds): read when asked for, and no database
    # constraint lists them, so that a case type's own kind needs no migration here.
    kind = models.CharField(max_length=20, choices=kind_choices)
    value = models.CharField(max_length=VALUE_MAX)
    display = models.CharField(max_length=VALUE_MAX)
    created_at = models.DateTimeField(auto_now_add=True)
    # Set once a person decided a case that names it as fraud (Entities.fraud_outcomes): the
    # flag every page shows beside it, read without a join.
    confirmed_fraud_at = models.DateTimeField(null=True, blank=True)
    confirmed_fraud_case = models.ForeignKey("cases.Case", null=True, blank=True, on_delete=models.SET_NULL,
                                             related_name="+")

    class Meta:
        verbose_name_plural = "entities"
        constraints = [
            models.UniqueConstraint(fields=["kind", "value"], name="entity_kind_value_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.kind_label} {self.display}"

    @property
    def kind_label(self) -> str:
        return KINDS.get(self.kind, self.kind)

    @property
    def confirmed_fraud(self) -> bool:
        return self.confirmed_fraud_at is not None


class Mention(models.Model):
    """An entity named by a case: where it came from (the record's field, or the agent and
    the tool that found it). One per entity and case: the first source found is kept."""

    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="mentions")
    case = models.ForeignKey("cases.Case", on_delete=models.CASCADE, related_name="entity_mentions")
    source_field = models.CharField(max_length=60, blank=True)
    source_agent = models.CharField(max_length=60, blank=True)
    source_tool = models.CharField(max_length=60, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["entity", "case"], name="mention_entity_case_unique"),
        ]
        indexes = [
            # "Other cases that name this entity, newest first": one index range per entity.
            models.Index(F("entity"), F("created_at").desc(), F("id").desc(), name="mention_entity_newest"),
            models.Index(fields=["case", "entity"], name="mention_case_entity"),
        ]

    def __str__(self) -> str:
        return f"{self.entity} in case {self.case_id}"


class CaseLink(models.Model):
    """A person's link between two cases, with why."""

    class Kind(models.TextChoices):
        RELATED = "related", "Related"
        DUPLICATE = "duplicate", "Duplicate of"
        PARENT = "parent", "Parent of"

    from_case = models.ForeignKey("cases.Case", on_delete=models.CASCADE, related_name="links_out")
    to_case = models.ForeignKey("cases.Case", on_delete=models.CASCADE, related_name="links_in")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    reason = models.TextField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["from_case", "to_case", "kind"], name="case_link_unique"),
            models.CheckConstraint(condition=~Q(from_case=F("to_case")), name="case_link_not_self"),
            models.CheckConstraint(condition=Q(kind__in=["related", "duplicate", "parent"]), name="case_link_kind_valid"),
            models.CheckConstraint(condition=~Q(reason=""), name="case_link_reason_required"),
        ]

    def __str__(self) -> str:
        return f"{self.from_case_id} {self.kind} {self.to_case_id}"


class CaseMerge(models.Model):
    """A duplicate merged into the case that survives: once per merged case, never undone."""

    merged = models.OneToOneField("cases.Case", on_delete=models.PROTECT, related_name="merged_into")
    survivor = models.ForeignKey("cases.Case", on_delete=models.PROTECT, related_name="merges_in")
    reason = models.TextField()
    merged_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    merged_at = models.DateTimeField(auto_now_add=True)
    # What moved: {"app_label.Model": count}, and the rows a unique constraint kept behind.
    moved = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=~Q(merged=F("survivor")), name="case_merge_not_self"),
        ]

    def __str__(self) -> str:
        return f"{self.merged_id} -> {self.survivor_id}"
