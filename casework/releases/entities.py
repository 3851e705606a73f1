"""What a release names (casework.entities): the product areas its tests cover, as release
components (a release that breaks payments and the next one touching payments meet there)."""

from __future__ import annotations

from casework.cases.types import Entities, Found


def release_entities(case) -> list[Found]:
    release = getattr(case, "release", None)
    if release is None:
        return []
    areas = release.test_details.exclude(area="").order_by("area").values_list("area", flat=True).distinct()[:50]
    return [Found("release_component", area, "test_details.area") for area in areas]


ENTITIES = Entities(extract=release_entities)
