"""A notification's body is encrypted at rest (issue 42): it can quote whatever its case holds,
a validation request's quote of an employee's absence claim among them."""

import casework.security.fields
from django.db import migrations

from casework.security.encryption import encrypt_columns


class Migration(migrations.Migration):

    dependencies = [
        ('notifications', '0002_copy_access_notifications'),
    ]

    operations = [
        migrations.AlterField(
            model_name='notification',
            name='body',
            field=casework.security.fields.EncryptedTextField(),
        ),
        migrations.RunPython(*encrypt_columns("notifications_notification", "body")),
    ]
