"""The access flow's notifications move to this app (one mechanism for every case type): copy
its rows, with the request each carried as the generic target. access 0003 then drops its table.

Each row keeps its id, so that an email task queued before the move (by its old name,
casework.access.tasks.notification_email_send, still registered) finds its notification; the
id sequence is then moved past them (PostgreSQL)."""

from django.core.management.color import no_style
from django.db import migrations


def copy(apps, schema_editor):
    Old = apps.get_model("access", "Notification")
    New = apps.get_model("notifications", "Notification")
    ContentType = apps.get_model("contenttypes", "ContentType")
    request_type = None
    batch = []
    for old in Old.objects.order_by("pk").iterator(chunk_size=2000):
        if old.request_id and request_type is None:
            request_type, _ = ContentType.objects.get_or_create(app_label="access", model="inforequest")
        batch.append(New(
            id=old.id, recipient_user_id=old.recipient_user_id, recipient_name=old.recipient_name,
            recipient_email=old.recipient_email, case_id=old.case_id, kind=old.kind, subject=old.subject,
            body=old.body, url=old.url, created_at=old.created_at, read_at=old.read_at, emailed_at=old.emailed_at,
            email_attempts=old.email_attempts, email_failed_at=old.email_failed_at, email_error=old.email_error,
            target_type=request_type if old.request_id else None, target_id=old.request_id,
        ))
        if len(batch) >= 2000:
            New.objects.bulk_create(batch)
            batch = []
    New.objects.bulk_create(batch)
    with schema_editor.connection.cursor() as cursor:
        for sql in schema_editor.connection.ops.sequence_reset_sql(no_style(), [New]):
            cursor.execute(sql)


class Migration(migrations.Migration):

    dependencies = [
        ("notifications", "0001_initial"),
        ("access", "0002_notification_delivery"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(copy, migrations.RunPython.noop)]
