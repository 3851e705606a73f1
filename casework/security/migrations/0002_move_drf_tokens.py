"""Existing DRF tokens keep working: each becomes an ApiToken holding the SHA-256 of its key
(the same secret authenticates, `Authorization: Token <key>`), and the plaintext row is
deleted, so that no key stays readable in the database. A moved token expires
API_TOKEN_DAYS after this migration, like a new one."""

import hashlib
from datetime import timedelta

from django.conf import settings
from django.db import migrations
from django.utils import timezone


def forwards(apps, schema_editor):
    Token = apps.get_model("authtoken", "Token")
    ApiToken = apps.get_model("security", "ApiToken")
    days = getattr(settings, "API_TOKEN_DAYS", 90)
    expires = timezone.now() + timedelta(days=days) if days else None
    for token in Token.objects.all():
        ApiToken.objects.create(user_id=token.user_id, name="moved from the DRF token table",
                                prefix=token.key[:8], digest=hashlib.sha256(token.key.encode()).hexdigest(),
                                created_at=token.created, expires_at=expires)
    Token.objects.all().delete()


class Migration(migrations.Migration):

    dependencies = [
        ("security", "0001_api_tokens"),
        ("authtoken", "0004_alter_tokenproxy_options"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
