"""Salted payload digests and tombstones (issue 42; audit.models explains the two schemes).

1. The append-only triggers go (they would refuse step 3).
2. Four columns: `scheme` (existing rows: 1; new ones: 2), `salt`, `payload_digest`, `tombstone`.
3. Entries still pending get a salt and the digest of their payload and join scheme 2: the
   sequencer will hash them so. Entries already sequenced keep scheme 1 and their hashes, so the
   checkpoints signed over them still verify; they cannot be tombstoned.
4. A constraint ties the columns to the scheme.
5. The triggers come back, allowing two updates: the sequencer's one-time write of position,
   prev_hash and hash (as before), and an erasure's tombstone of a scheme-2 entry: actor,
   actor_user_id and data replaced by the tombstone values ("[erased]", NULL, {}), the salt
   cleared, `tombstone` set once to the request's reference, and every other column (digest,
   hashes, position among them) unchanged. PostgreSQL compares whole rows, so a column added
   later is covered without listing it; SQLite's trigger names every column, as 0004's did.
"""

import secrets
from importlib import import_module

from django.db import migrations, models

_v0003 = import_module("audit.migrations.0003_append_only_trigger_row_compare")
_v0004 = import_module("audit.migrations.0004_append_only_trigger_sqlite")

SEQUENCING = ("position", "prev_hash", "hash")
PAYLOAD = ("actor", "actor_user_id", "data", "salt", "tombstone")
TOMBSTONE_ACTOR = "[erased]"  # audit.models.TOMBSTONE_ACTOR, as of this migration

_PG_FUNCTION = """
CREATE OR REPLACE FUNCTION audit_auditentry_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    expected audit_auditentry;
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'audit entries are append-only: DELETE of entry % refused', OLD.id;
    END IF;
    -- The sequencer's one-time write of position, prev_hash and hash.
    expected := NEW;
    expected.position := NULL;
    expected.prev_hash := NULL;
    expected.hash := NULL;
    IF OLD.position IS NULL AND OLD.prev_hash IS NULL AND OLD.hash IS NULL
       AND NEW.position IS NOT NULL AND NEW.prev_hash IS NOT NULL AND NEW.hash IS NOT NULL
       AND expected IS NOT DISTINCT FROM OLD THEN
        RETURN NEW;
    END IF;
    -- An erasure's tombstone of a scheme-2 entry: the payload replaced, the salt cleared,
    -- the request named once; the digest, hashes, position and the rest unchanged.
    expected := NEW;
    expected.actor := OLD.actor;
    expected.actor_user_id := OLD.actor_user_id;
    expected.data := OLD.data;
    expected.salt := OLD.salt;
    expected.tombstone := OLD.tombstone;
    IF OLD.scheme = 2 AND OLD.tombstone = '' AND NEW.tombstone <> ''
       AND NEW.actor = '[erased]' AND NEW.actor_user_id IS NULL AND NEW.data = '{}'::jsonb
       AND NEW.salt = ''
       AND expected IS NOT DISTINCT FROM OLD THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit entries are append-only: UPDATE of entry % refused (only the sequencer''s '
                    'one-time write of position and hashes, and an erasure''s tombstone, are allowed)', OLD.id;
END;
$$;
"""
_PG_TRIGGER = """
CREATE TRIGGER audit_auditentry_append_only
    BEFORE UPDATE OR DELETE ON audit_auditentry
    FOR EACH ROW EXECUTE FUNCTION audit_auditentry_append_only();
"""
_PG_DROP = """
DROP TRIGGER IF EXISTS audit_auditentry_append_only ON audit_auditentry;
DROP FUNCTION IF EXISTS audit_auditentry_append_only();
"""

_SQLITE_UPDATE = """
CREATE TRIGGER audit_auditentry_append_only_update
BEFORE UPDATE ON audit_auditentry
FOR EACH ROW
WHEN NOT (
    (OLD.position IS NULL AND OLD.prev_hash IS NULL AND OLD.hash IS NULL
     AND NEW.position IS NOT NULL AND NEW.prev_hash IS NOT NULL AND NEW.hash IS NOT NULL
     AND {sequencing_unchanged})
    OR
    (OLD.scheme = 2 AND OLD.tombstone = '' AND NEW.tombstone <> ''
     AND NEW.actor = '[erased]' AND NEW.actor_user_id IS NULL AND NEW.data = '{{}}' AND NEW.salt = ''
     AND {tombstone_unchanged})
)
BEGIN
    SELECT RAISE(ABORT, 'audit entries are append-only: UPDATE refused (only the sequencer''s one-time write of position and hashes, and an erasure''s tombstone, are allowed)');
END
"""


def _unchanged(columns, quote) -> str:
    return "\n     AND ".join(f"NEW.{quote(c)} IS OLD.{quote(c)}" for c in columns)


def create_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(_PG_FUNCTION + _PG_TRIGGER, params=None)  # no placeholders: RAISE uses %
    elif vendor == "sqlite":
        quote = schema_editor.quote_name
        columns = [f.column for f in apps.get_model("audit", "AuditEntry")._meta.concrete_fields]
        sql = _SQLITE_UPDATE.format(
            sequencing_unchanged=_unchanged([c for c in columns if c not in SEQUENCING], quote),
            tombstone_unchanged=_unchanged([c for c in columns if c not in PAYLOAD], quote))
        schema_editor.execute(sql, params=None)
        schema_editor.execute(_v0004._DELETE_TRIGGER, params=None)


def drop_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(_PG_DROP, params=None)
    else:
        _v0004.drop_triggers(apps, schema_editor)


def create_old_triggers(apps, schema_editor):
    """Reversed: 0003's function and 0002's trigger (PostgreSQL), 0004's triggers (SQLite)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_v0003._ROW_COMPARE + _PG_TRIGGER, params=None)
    else:
        _v0004.create_triggers(apps, schema_editor)


def seal_pending(apps, schema_editor):
    """Give each pending entry a salt and its payload's digest (scheme 2): the sequencer hashes
    the digest, not the payload. Sequenced entries keep scheme 1 and their hashes."""
    from audit.models import SCHEME_SALTED, payload_digest

    entry_model = apps.get_model("audit", "AuditEntry")
    pending = entry_model.objects.filter(position__isnull=True).order_by("id")
    for pk, actor, actor_user_id, data in pending.values_list("id", "actor", "actor_user_id", "data").iterator():
        salt = secrets.token_hex(16)
        entry_model.objects.filter(pk=pk).update(
            scheme=SCHEME_SALTED, salt=salt, payload_digest=payload_digest(salt, actor, actor_user_id, data))


class Migration(migrations.Migration):

    dependencies = [
        ('audit', '0008_accessentry'),
    ]

    operations = [
        migrations.RunPython(drop_triggers, create_old_triggers),
        migrations.AddField(
            model_name='auditentry',
            name='payload_digest',
            field=models.CharField(blank=True, default='', editable=False, max_length=64),
        ),
        migrations.AddField(
            model_name='auditentry',
            name='salt',
            field=models.CharField(blank=True, default='', editable=False, max_length=32),
        ),
        # Every row there is now is of scheme 1; 2 is the default of those written from now on.
        migrations.AddField(
            model_name='auditentry',
            name='scheme',
            field=models.PositiveSmallIntegerField(default=1, editable=False),
            preserve_default=False,
        ),
        migrations.AlterField(
            model_name='auditentry',
            name='scheme',
            field=models.PositiveSmallIntegerField(default=2, editable=False),
        ),
        migrations.AddField(
            model_name='auditentry',
            name='tombstone',
            field=models.CharField(blank=True, default='', editable=False, max_length=64),
        ),
        migrations.RunPython(seal_pending, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='auditentry',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('payload_digest', ''), ('position__isnull', False), ('salt', ''), ('scheme', 1), ('tombstone', '')), models.Q(('scheme', 2), models.Q(('payload_digest', ''), _negated=True), models.Q(models.Q(('tombstone', ''), models.Q(('salt', ''), _negated=True)), models.Q(models.Q(('tombstone', ''), _negated=True), ('salt', '')), _connector='OR')), _connector='OR'), name='audit_entry_scheme'),
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
