"""The demo snapshot (tests/demo_snapshot.py) restored into a worker's database that has moved on
since the snapshot was taken: what the database keeps of its own (the applied migrations,
content types, permissions) stays usable."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from tests import demo_snapshot

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="a SQLite snapshot is the whole file: nothing "
                    "of the worker's own is kept beside it (needs PostgreSQL: make test uses it when one answers)")
def test_a_restore_leaves_the_kept_tables_sequences_where_their_rows_need_them(tmp_path, settings):
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
    moved_on = [recorder.Migration.objects.create(app="snapshot_test", name=f"000{n}_later") for n in range(3)]

    demo_snapshot._restore(snapshot)

    assert recorder.Migration.objects.filter(pk__in=[m.pk for m in moved_on]).count() == 3  # kept, as they are
    applied = recorder.Migration.objects.create(app="snapshot_test", name="0004_after_the_restore")
    assert applied.pk > max(m.pk for m in moved_on)
    recorder.Migration.objects.filter(app="snapshot_test").delete()
