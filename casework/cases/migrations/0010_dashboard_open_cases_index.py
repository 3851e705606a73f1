"""The dashboard's open cases: an index of the open ones (issue 29, bench/growth.py)."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('cases', '0009_write_only_indexes'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name='case',
            index=models.Index(condition=models.Q(('status__in', ('resolved', 'closed')), _negated=True), fields=['case_type', 'status', 'priority'], name='case_open'),
        ),
    ]
