"""The card's current case (CardCase), one per card at most, filled from the live hits.

Before it, two evaluations racing on a card could each open a case, so a card may have
several open cases with hits. The backfill makes only the newest of them (by its latest hit)
the card's current case, so the constraint holds; the older ones stay open and keep their hits
(nothing is merged or lost: a person merges them from the case page if they are one matter),
and new hits join the current one. Cases a person decided (resolved, closed) are no one's
current case."""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Max, Min

DONE_STATUSES = ("resolved", "closed")


def backfill(apps, schema_editor):
    RuleHit = apps.get_model("transactions", "RuleHit")
    CardCase = apps.get_model("transactions", "CardCase")
    spans = (RuleHit.objects.filter(case__isnull=False).exclude(case__status__in=DONE_STATUSES)
             .values("transaction__account_id", "transaction__card_last4", "case_id")
             .annotate(first=Min("created_at"), last=Max("created_at")))
    newest = {}
    for span in spans:
        card = (span["transaction__account_id"], span["transaction__card_last4"])
        if card not in newest or (span["last"], span["case_id"]) > (newest[card]["last"], newest[card]["case_id"]):
            newest[card] = span
    CardCase.objects.bulk_create([
        CardCase(account_id=account_id, card_last4=last4, case_id=span["case_id"], current=True,
                 opened_at=span["first"], last_hit_at=span["last"])
        for (account_id, last4), span in newest.items()], batch_size=1000)


class Migration(migrations.Migration):

    dependencies = [
        ('cases', '0012_case_restricted_caserestriction'),
        ('transactions', '0004_investigation_bucket_newest'),
    ]

    operations = [
        migrations.CreateModel(
            name='CardCase',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('card_last4', models.CharField(max_length=4)),
                ('current', models.BooleanField(default=True)),
                ('opened_at', models.DateTimeField()),
                ('last_hit_at', models.DateTimeField()),
                ('account', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='card_cases', to='transactions.cardaccount')),
                ('case', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='card_cases', to='cases.case')),
            ],
            options={
                'ordering': ['-opened_at', '-id'],
                'constraints': [models.UniqueConstraint(condition=models.Q(('current', True)), fields=('account', 'card_last4'), name='txn_one_current_case_per_card')],
            },
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
