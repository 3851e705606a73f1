from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("saved_views", "0002_share_with_teams"),
    ]

    operations = [
        migrations.RemoveField(model_name="savedview", name="team"),
        migrations.RenameField(model_name="savedview", old_name="share_team", new_name="team"),
        migrations.AlterField(
            model_name="savedview",
            name="team",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                                    related_name="saved_views", to="people.team"),
        ),
    ]
