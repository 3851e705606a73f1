"""Entity kinds are a registry (issue 45): a case type adds its own kind from its ready(), and
the database lists none of them."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from casework.entities import kinds
from casework.entities.models import Entity


def test_a_type_registers_its_own_kind_and_the_model_offers_it(monkeypatch):
    monkeypatch.setattr(kinds, "KINDS", dict(kinds.KINDS))
    monkeypatch.setattr(kinds, "_CASELESS", set(kinds._CASELESS))
    assert "release_component" in kinds.KINDS  # registered by the releases app
    kinds.kind_register("serial_number", "Serial number")
    kinds.kind_register("serial_number", "Serial number")  # again: harmless
    assert ("serial_number", "Serial number") in Entity._meta.get_field("kind").choices
    assert kinds.normalise("serial_number", " SN-0042 ") == ("SN-0042", "SN-0042")
    with pytest.raises(ValueError, match="registered already"):
        kinds.kind_register("serial_number", "Another label")


def test_an_unknown_kind_is_refused_by_normalise():
    with pytest.raises(ValidationError, match="Choose one of"):
        kinds.normalise("warranty_thing", "x")
