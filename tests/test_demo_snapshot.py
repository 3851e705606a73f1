"""The demo snapshot (tests/demo_snapshot.py) restored into a worker's database that has moved on
since the snapshot was taken: what the database keeps of its own (the applied migrations,
content types, permissions) stays usable."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from tests import demo_snapshot

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_migration_recorded_after_a_restore_takes_a_free_id(tmp_path, settings):
    """PostgreSQL: the snapshot leaves out the kept tables' rows, so the worker's own applied
    migrations stay, and their id sequence must follow them (it was set back to the snapshot
    database's, and the next migration collided). SQLite: the snapshot is the whole file, the
    worker's rows are replaced with the snapshot's, and the next migration must record too."""
    from casework.people.roles import INVESTIGATOR
    from casework.people.services import user_create

    # The files a snapshot copies beside the rows: this test's own, not the worker's traces.
    settings.MEDIA_ROOT, settings.TRACE_DIR = tmp_path / "media", tmp_path / "traces"
    settings.AUDIT_CHECKPOINT_DIR = tmp_path / "checkpoints"
    user_create(actor="system", username="in-the-snapshot", password="pass-123-abc", role=INVESTIGATOR)
    snapshot = tmp_path / "snapshot"
    demo_snapshot._take(snapshot)
    # Since then, this database applied migrations (as tests/audit/test_erasure.py's migration
    # test does): rows, and the sequence, past what the snapshot's database had.
    recorder = MigrationRecorder(connection)
    for n in range(3):
        recorder.Migration.objects.create(app="snapshot_test", name=f"000{n}_later")

    demo_snapshot._restore(snapshot)

    kept = recorder.Migration.objects.filter(app="snapshot_test").count()
    assert kept == (3 if connection.vendor == "postgresql" else 0), kept  # the worker's own rows, or the file's
    held = set(recorder.Migration.objects.values_list("pk", flat=True))
    applied = recorder.Migration.objects.create(app="snapshot_test", name="0004_after_the_restore")
    assert applied.pk not in held and applied.pk > max(held)
    recorder.Migration.objects.filter(app="snapshot_test").delete()
