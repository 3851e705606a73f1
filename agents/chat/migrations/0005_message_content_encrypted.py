"""A conversation's messages are encrypted at rest (issue 42): the question, the answer and
the tools it called quote the case. The columns become text and the existing values are
encrypted under the newest key."""

import casework.security.fields
from django.db import migrations

from casework.security.encryption import encrypt_columns


class Migration(migrations.Migration):

    dependencies = [
        ('chat', '0004_answering_index'),
    ]

    operations = [
        migrations.AlterField(
            model_name='chatmessage',
            name='content',
            field=casework.security.fields.EncryptedTextField(),
        ),
        migrations.AlterField(
            model_name='chatmessage',
            name='tool_calls',
            field=casework.security.fields.EncryptedJSONField(blank=True, default=list),
        ),
        migrations.RunPython(*encrypt_columns("chat_chatmessage", "content", "tool_calls")),
    ]
