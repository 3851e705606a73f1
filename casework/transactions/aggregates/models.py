"""Counters behind the rule language's aggregates (casework.transactions.aggregates).

A series is what counters are kept for: a group (card, account, device, IP, email hash or
merchant), the filters a transaction must pass to be counted, and for a distinct count the
field whose values are kept. Its buckets hold, per group value and time bucket, the number
of transactions and the sum of their amounts (in cents of the settlement currency); its
distinct rows hold the values seen per group value and bucket. Derived data: the rebuild
(`manage.py aggregates_rebuild`) recomputes them from the transactions.
"""

from __future__ import annotations

from django.db import models


class AggregateSeries(models.Model):
    key = models.CharField(max_length=16, unique=True)
    definition = models.JSONField(help_text='{"by", "where", "of"}: see casework.transactions.rules.Aggregate.')
    created_at = models.DateTimeField()
    built_at = models.DateTimeField(null=True, blank=True, help_text="When it was last rebuilt from the history.")

    class Meta:
        ordering = ["key"]
        verbose_name_plural = "aggregate series"

    def __str__(self) -> str:
        return f"{self.key} {self.definition}"


class AggregateBucket(models.Model):
    series = models.CharField(max_length=16)
    grp = models.CharField(max_length=160, help_text="The group's value (card: account id and last four).")
    size = models.PositiveIntegerField(help_text="60, 3600 or 86400 seconds.")
    start = models.BigIntegerField(help_text="Epoch second, aligned to the size.")
    n = models.PositiveIntegerField(default=0)
    cents = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["series", "grp", "size", "start"], name="txn_agg_bucket_key")]
        indexes = [models.Index(fields=["size", "start"], name="txn_agg_bucket_age")]


class AggregateDistinct(models.Model):
    series = models.CharField(max_length=16)
    grp = models.CharField(max_length=160)
    size = models.PositiveIntegerField()
    start = models.BigIntegerField()
    value = models.CharField(max_length=160)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["series", "grp", "size", "start", "value"],
                                               name="txn_agg_distinct_key")]
        indexes = [models.Index(fields=["size", "start"], name="txn_agg_distinct_age")]
