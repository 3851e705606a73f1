import django.db.models.deletion
from django.db import migrations, models


def reservations_forget(apps, schema_editor):
    """Reservations made before holds existed have none, so nothing could ever give them back:
    they are forgotten (the workers restart with a deploy; their calls in flight settle their
    spend, and give back only what a hold records)."""
    apps.get_model("budgets", "CaseBudget").objects.exclude(reserved_musd=0, reserved_tokens=0).update(
        reserved_musd=0, reserved_tokens=0)


class Migration(migrations.Migration):

    dependencies = [
        ('budgets', '0001_case_budgets'),
        ('cases', '0012_case_restricted_caserestriction'),
    ]

    operations = [
        migrations.CreateModel(
            name='BudgetHold',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('holder', models.CharField(help_text='The process: host, pid and a random token.', max_length=64)),
                ('host', models.CharField(max_length=255)),
                ('pid', models.PositiveIntegerField()),
                ('reserved_musd', models.BigIntegerField(default=0)),
                ('reserved_tokens', models.BigIntegerField(default=0)),
                ('renewed_at', models.DateTimeField()),
                ('case', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='cases.case')),
            ],
            options={
                'indexes': [models.Index(fields=['renewed_at'], name='budgethold_renewed')],
                'constraints': [models.UniqueConstraint(fields=('holder', 'case'), name='budgethold_one_per_holder_case')],
            },
        ),
        migrations.RunPython(reservations_forget, migrations.RunPython.noop),
    ]
