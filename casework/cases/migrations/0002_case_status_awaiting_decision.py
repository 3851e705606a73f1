from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('cases', '0001_initial'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='case',
            name='case_status_valid',
        ),
        migrations.AlterField(
            model_name='case',
            name='status',
            field=models.CharField(choices=[('new', 'New'), ('in_progress', 'In progress'), ('awaiting_response', 'Awaiting response'), ('awaiting_decision', 'Awaiting decision'), ('resolved', 'Resolved'), ('closed', 'Closed')], default='new', max_length=20),
        ),
        migrations.AddConstraint(
            model_name='case',
            constraint=models.CheckConstraint(condition=models.Q(('status__in', ['new', 'in_progress', 'awaiting_response', 'awaiting_decision', 'resolved', 'closed'])), name='case_status_valid'),
        ),
    ]
