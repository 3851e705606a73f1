"""What a claim names across cases: the product's serial number (a kind this type registers)."""

from __future__ import annotations

from casework.cases.types import Entities, Found


def warranty_entities(case) -> list[Found]:
    claim = getattr(case, "warranty_claim", None)
    return [Found("serial_number", claim.serial_number, "serial_number")] if claim is not None else []


ENTITIES = Entities(extract=warranty_entities)
