"""Webhook endpoint secrets are encrypted at rest (issue 42, casework.security.encryption): the
columns become text and the secrets already stored are encrypted under the newest key."""

import casework.outbox.models
import casework.security.fields
from django.db import migrations

from casework.security.encryption import encrypt_columns


class Migration(migrations.Migration):

    dependencies = [
        ('outbox', '0008_endpoint_breaker_window'),
    ]

    operations = [
        migrations.AlterField(
            model_name='endpoint',
            name='previous_secret',
            field=casework.security.fields.EncryptedTextField(blank=True, default='', editable=False),
        ),
        migrations.AlterField(
            model_name='endpoint',
            name='secret',
            field=casework.security.fields.EncryptedTextField(default=casework.outbox.models.secret_new, editable=False),
        ),
        migrations.RunPython(*encrypt_columns("outbox_endpoint", "secret", "previous_secret")),
    ]
