"""One CSV row with its line number: field readers that record a problem naming the file,
the row and the column instead of raising (in the list of problems the importer reports)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime

from django.utils.dateparse import parse_datetime

from casework.access.data_io.files import Problem


class _Row:
    """One CSV row with its line number; field readers record problems instead of raising."""

    def __init__(self, problems: list[Problem], file: str, line: int, data: dict):
        self.problems, self.file, self.line, self.data = problems, file, line, data
        self.ok = True

    def problem(self, column: str, message: str) -> None:
        self.ok = False
        self.problems.append(Problem(self.file, self.line, column, message))

    def text(self, column: str, *, required: bool = False, max_length: int | None = None) -> str:
        value = (self.data.get(column) or "").strip()
        if required and not value:
            self.problem(column, "is required")
        if max_length and len(value) > max_length:
            self.problem(column, f"is longer than {max_length} characters")
        return value

    def day(self, column: str, *, required: bool = False) -> date | None:
        value = self.text(column, required=required)
        if not value:
            return None
        try:
            return date.fromisoformat(value)
        except ValueError:
            self.problem(column, f"{value!r} is not a date (YYYY-MM-DD)")
            return None

    def moment(self, column: str) -> datetime | None:
        value = self.text(column, required=True)
        if not value:
            return None
        parsed = None
        try:
            parsed = parse_datetime(value)
        except ValueError:
            parsed = None
        if parsed is None:
            self.problem(column, f"{value!r} is not an ISO 8601 date and time")
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)

    def ref(self, column: str, lookup: Callable[[str], object | None], what: str, *, required: bool = True):
        value = self.text(column, required=required)
        if not value:
            return None
        obj = lookup(value)
        if obj is None:
            self.problem(column, f"no {what} {value!r}")
        return obj

    def choice(self, column: str, choices: dict[str, str], default: str) -> str:
        value = self.text(column)
        if not value:
            return default
        key = value.strip().lower()
        if key not in choices:
            self.problem(column, f"{value!r} is not one of {', '.join(sorted(set(choices)))}")
            return default
        return choices[key]
