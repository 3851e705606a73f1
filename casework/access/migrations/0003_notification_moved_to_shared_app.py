# The access flow's notifications now live in the shared notifications app (its 0002 copied
# the rows); this drops the old table.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("access", "0002_notification_delivery"),
        ("notifications", "0002_copy_access_notifications"),
    ]

    operations = [
        migrations.DeleteModel(name="Notification"),
    ]
