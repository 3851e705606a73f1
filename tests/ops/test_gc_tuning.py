"""The garbage collector's set-up in workers and web processes (casework/ops/gc_tuning.py)."""

from __future__ import annotations

import gc

import pytest
from django.test import override_settings

from casework.ops.gc_tuning import gc_tune


@pytest.fixture
def gc_state():
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    yield
    gc.unfreeze()
    if frozen:  # the test process's own set-up (tests/conftest.py), as it was
        gc.collect()
        gc.freeze()
    gc.set_threshold(*threshold)


@override_settings(GC_FREEZE=True, GC_THRESHOLD=(12345, 7, 9))
def test_what_the_process_holds_is_frozen_and_the_thresholds_set(gc_state):
    held = [{"alive": True}]  # a container the collector tracks, alive now: frozen with the rest
    assert any(o is held for o in gc.get_objects())
    done = gc_tune()
    assert gc.get_threshold() == (12345, 7, 9) == done["threshold"]
    assert done["frozen"] > 1000 and gc.get_freeze_count() > 1000  # (a frozen object may be freed since)
    assert not any(o is held for o in gc.get_objects())  # in no generation a pass walks
    young = [{"new": True}]  # made after the freeze: collected as usual
    assert any(o is young for o in gc.get_objects())


@override_settings(GC_FREEZE=False, GC_THRESHOLD=(700, 10, 10))
def test_cpythons_defaults_can_be_kept(gc_state):
    before = gc.get_freeze_count()
    done = gc_tune()
    assert done == {"frozen": 0, "threshold": (700, 10, 10)}
    # nothing more frozen (the test process's own freeze, tests/conftest.py, may lose an object
    # that dies meanwhile: its count can only fall)
    assert gc.get_freeze_count() <= before
