"""A stored evaluation scenario's text is encrypted at rest (issue 42): one made from a real
case carries its data. The column's existing values are encrypted under the newest key."""

import casework.security.fields
from django.db import migrations

from casework.security.encryption import encrypt_columns


class Migration(migrations.Migration):

    dependencies = [
        ('evals', '0002_storedscenario'),
    ]

    operations = [
        migrations.AlterField(
            model_name='storedscenario',
            name='text',
            field=casework.security.fields.EncryptedTextField(help_text='The scenario as YAML, validated against the scenario schema.'),
        ),
        migrations.RunPython(*encrypt_columns("evals_storedscenario", "text")),
    ]
