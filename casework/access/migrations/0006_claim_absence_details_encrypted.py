"""A claim's absence details are encrypted at rest (issue 42; casework/access/special.py names
them: the kind of absence, its dates, the explanation, the records check's result). The
columns become text and the existing values are encrypted under the newest key. The database
no longer checks the period's order (ciphertexts do not compare): the service does."""

import casework.security.fields
from django.db import migrations

from casework.security.encryption import encrypt_columns


class Migration(migrations.Migration):

    dependencies = [
        ('access', '0005_user_request_queued_failed'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='employeeclaim',
            name='access_claim_period_ordered',
        ),
        migrations.AlterField(
            model_name='employeeclaim',
            name='claim_type',
            field=casework.security.fields.EncryptedTextField(choices=[('sick_leave_cover', 'I covered for a colleague on sick leave'), ('vacation_cover', 'I covered for a colleague on vacation'), ('other', 'Something else')]),
        ),
        migrations.AlterField(
            model_name='employeeclaim',
            name='explanation',
            field=casework.security.fields.EncryptedTextField(max_length=4000),
        ),
        migrations.AlterField(
            model_name='employeeclaim',
            name='period_end',
            field=casework.security.fields.EncryptedDateField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='employeeclaim',
            name='period_start',
            field=casework.security.fields.EncryptedDateField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='employeeclaim',
            name='validation',
            field=casework.security.fields.EncryptedJSONField(blank=True, default=dict),
        ),
        migrations.RunPython(*encrypt_columns("access_employeeclaim", "claim_type", "period_start", "period_end",
                                              "explanation", "validation")),
    ]
