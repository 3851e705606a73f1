"""The look-alike search's cell index ends in `decision_id * -1` (models.NEWEST_FIRST) instead of
`decision_id DESC`: the search orders each cell's range by that expression, which only this
index gives, so the planner cannot choose to walk the primary key backwards instead (issue 29)."""

from django.db import migrations, models
from django.db.models.expressions import CombinedExpression


class Migration(migrations.Migration):

    dependencies = [
        ('cases', '0010_dashboard_open_cases_index'),
        ('fraud', '0006_write_only_indexes'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='decidedvector',
            name='fraud_decided_cell_newest',
        ),
        migrations.AddIndex(
            model_name='decidedvector',
            index=models.Index(models.F('confirmed'), models.F('cell'),
                               CombinedExpression(models.F('decision'), '*', models.Value(-1)),
                               name='fraud_decided_cell_rank'),
        ),
    ]
