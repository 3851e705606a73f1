"""What a pipeline read and wrote is encrypted at rest (issue 42): a run's state, each call's
input and output, a paused call's arguments, snapshot, approved arguments and reason. The
columns become text and the existing values are encrypted under the newest key.

First, while the outputs are still JSON the database reads, each call's output_verdict (what
the dashboard counts) is filled from its output: the one agent with a verdict_key when this
was written is the fraud orchestrator (`risk_level`)."""

import casework.security.fields
from django.db import migrations, models

from casework.security.encryption import encrypt_columns

VERDICT_SQL = {
    "postgresql": ("UPDATE agents_agentcall SET output_verdict = LEFT(output->>'risk_level', 20) "
                   "WHERE name = 'orchestrator' AND jsonb_typeof(output->'risk_level') = 'string'"),
    "sqlite": ("UPDATE agents_agentcall SET output_verdict = substr(json_extract(output, '$.risk_level'), 1, 20) "
               "WHERE name = 'orchestrator' AND json_valid(output) AND json_type(output, '$.risk_level') = 'text'"),
}


def fill_verdicts(apps, schema_editor):
    sql = VERDICT_SQL.get(schema_editor.connection.vendor)
    if sql:
        schema_editor.execute(sql)


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0011_run_budget_statuses'),
    ]

    operations = [
        migrations.AddField(
            model_name='agentcall',
            name='output_verdict',
            field=models.CharField(blank=True, default='', max_length=20),
        ),
        migrations.RunPython(fill_verdicts, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='agentcall',
            name='input',
            field=casework.security.fields.EncryptedJSONField(blank=True, default=dict),
        ),
        migrations.AlterField(
            model_name='agentcall',
            name='output',
            field=casework.security.fields.EncryptedJSONField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='agentrun',
            name='state',
            field=casework.security.fields.EncryptedJSONField(blank=True, default=dict),
        ),
        migrations.AlterField(
            model_name='runpause',
            name='approved_arguments',
            field=casework.security.fields.EncryptedJSONField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='runpause',
            name='arguments',
            field=casework.security.fields.EncryptedJSONField(blank=True, default=dict),
        ),
        migrations.AlterField(
            model_name='runpause',
            name='reason',
            field=casework.security.fields.EncryptedTextField(blank=True),
        ),
        migrations.AlterField(
            model_name='runpause',
            name='snapshot',
            field=casework.security.fields.EncryptedJSONField(blank=True, default=dict),
        ),
        migrations.RunPython(*encrypt_columns("agents_agentrun", "state")),
        migrations.RunPython(*encrypt_columns("agents_agentcall", "input", "output")),
        migrations.RunPython(*encrypt_columns("agents_runpause", "arguments", "reason", "snapshot",
                                              "approved_arguments")),
    ]
