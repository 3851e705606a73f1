"""What carries a claim's absence details onwards is encrypted at rest too (issue 42): a
validation request's body (it quotes the claim) and the agents' messages' context."""

import casework.security.fields
from django.db import migrations

from casework.security.encryption import encrypt_columns


class Migration(migrations.Migration):

    dependencies = [
        ('access', '0006_claim_absence_details_encrypted'),
    ]

    operations = [
        migrations.AlterField(
            model_name='agentmessage',
            name='context',
            field=casework.security.fields.EncryptedJSONField(default=dict),
        ),
        migrations.AlterField(
            model_name='inforequest',
            name='body',
            field=casework.security.fields.EncryptedTextField(),
        ),
        migrations.RunPython(*encrypt_columns("access_agentmessage", "context")),
        migrations.RunPython(*encrypt_columns("access_inforequest", "body")),
    ]
