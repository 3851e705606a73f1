"""The one JSON shape a CI pipeline posts a release in (the API, `import_release`, the demo).

    {
      "release_id": "rel-2026-11-23-web",          letters, digits, . _ - (1-64)
      "version": "v2.1.0",
      "changes": ["Added payment processing", "Fixed authentication bug"],
      "tests": {"passed": 142, "failed": 2, "skipped": 5},      optional if test_details given
      "deployment_metrics": {"error_rate": 0.02, "response_time_p95": 450},   each may be null
      "test_details": [{"name": "test_refund", "area": "payments", "critical": true,
                        "status": "failed", "message": "timeout after 30 s"}]
    }

error_rate is a fraction (0.02 = 2 %), response_time_p95 is in milliseconds. A metric that is
null or absent is missing data: the detective says so and never files such a release as low.
"""

from __future__ import annotations

from typing import Any, Literal

from django.core.exceptions import ValidationError
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic import ValidationError as PydanticValidationError


class TestIn(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    name: str = Field(min_length=1, max_length=200, description="The test's name.")
    area: str = Field(default="", max_length=60, description="The product area it covers (payments, auth ...).")
    critical: bool = Field(default=False, description="A failure here blocks a release on its own.")
    status: Literal["passed", "failed", "skipped"]
    message: str = Field(default="", max_length=2000, description="The failure message, if any.")


class TestCounts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    passed: int = Field(ge=0)
    failed: int = Field(ge=0)
    skipped: int = Field(default=0, ge=0)


class MetricsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    error_rate: float | None = Field(default=None, ge=0, le=1, description="Fraction of failed requests (0.02 = 2 %).")
    response_time_p95: float | None = Field(default=None, ge=0, description="95th percentile response time, ms.")


class ReleaseIn(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    release_id: str = Field(pattern=r"^[A-Za-z0-9._-]{1,64}$", examples=["rel-2026-11-23-web"])
    version: str = Field(min_length=1, max_length=64, examples=["v2.1.0"])
    changes: list[str] = Field(default_factory=list, max_length=200)
    tests: TestCounts | None = None
    deployment_metrics: MetricsIn = Field(default_factory=MetricsIn)
    test_details: list[TestIn] = Field(default_factory=list, max_length=2000)

    @model_validator(mode="after")
    def _counts(self) -> ReleaseIn:
        if any(not c.strip() or len(c) > 500 for c in self.changes):
            raise ValueError("changes: each change is a non-empty line of at most 500 characters.")
        if self.tests is None:
            if not self.test_details:
                raise ValueError("tests: give the counts (passed, failed, skipped) or test_details.")
            count = {s: sum(t.status == s for t in self.test_details) for s in ("passed", "failed", "skipped")}
            self.tests = TestCounts(**count)
        return self


def release_validate(data: Any) -> ReleaseIn:
    """The release, or a Django ValidationError whose keys name every bad field
    ("tests.failed", "test_details.3.status")."""
    if not isinstance(data, dict):
        raise ValidationError({"__all__": ["Expected a JSON object."]})
    try:
        return ReleaseIn.model_validate(data)
    except PydanticValidationError as exc:
        errors: dict[str, list[str]] = {}
        for error in exc.errors():
            field = ".".join(str(p) for p in error["loc"]) or "__all__"
            message = error["msg"].removeprefix("Value error, ")
            if field == "__all__" and ": " in message:
                field, message = message.split(": ", 1)
            errors.setdefault(field, []).append(message)
        raise ValidationError(errors) from None
