"""Reading alerts from a CSV file, for the upload page and `manage.py import_alerts`.

The header must hold `account_id` and the 13 feature columns, and may hold the five score
columns; any other column is refused by name. Values are validated like any alert
(schemas.AlertIn). Errors name the file line and the field, counting the header as line 1.

A file with any bad row imports nothing, unless skip_invalid is set: then the good rows
are imported and the bad ones reported as skipped. Header problems (unknown, missing or
repeated columns) always refuse the whole file.

Every row is validated before anything is written; the valid rows are then committed in
batches of COMMIT_BATCH (each all or nothing), so that a large file does not hold the
audit chain's lock, and with it every other writer, for minutes. Only a database failure
part-way (not bad data, which is caught before) could leave a file partly imported.

`risk_factors` is a list: in a CSV cell write it as a JSON array (["a", "b"]) or as
sentences separated by " | ".
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from typing import IO

from casework.fraud.features import ALL_FIELDS, LINK_NAMES, LIST_FIELDS, REQUIRED_FIELDS, SCORE_NAMES
from casework.fraud.models import Alert
from casework.fraud.schemas import alerts_validate

LINE_NOTE = "Line numbers count the header as line 1."
MAX_ROWS = 10_000
COMMIT_BATCH = 200


class CsvRefused(Exception):
    """The file cannot be read as an alerts CSV at all (encoding, header, no rows)."""

    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors))
        self.errors = errors


@dataclass(frozen=True)
class RowError:
    line: int
    field: str  # "" when the error is about the whole row
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}: {self.field}" if self.field else f"line {self.line}"
        return f"{where}: {self.message}"


@dataclass
class ImportReport:
    rows: int = 0
    created: list[Alert] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)
    # True when nothing was imported because some rows were bad (and skip_invalid was off).
    refused: bool = False

    @property
    def bad_lines(self) -> list[int]:
        return sorted({e.line for e in self.errors})

    @property
    def skipped(self) -> int:
        return 0 if self.refused else len(self.bad_lines)

    def summary(self) -> str:
        """One sentence for a person; the line numbers' meaning (LINE_NOTE) goes beside it."""
        if self.refused:
            return f"Nothing imported: {len(self.bad_lines)} of {self.rows} rows have errors."
        text = f"Imported {len(self.created)} alert{'s' if len(self.created) != 1 else ''}"
        if self.skipped:
            text += f"; skipped {self.skipped} invalid row{'s' if self.skipped != 1 else ''}"
        return text + "."


def _decode(data: bytes | str) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CsvRefused([f"The file is not UTF-8 text (byte {exc.start + 1} cannot be read). "
                          "Save it as CSV UTF-8 and try again."]) from None


def _cell(name: str, raw: str | None):
    """A cell's value for validation: empty cells are absent; list fields (risk_factors,
    device_ids, ip_addresses) become lists."""
    value = (raw or "").strip()
    if value == "":
        return None
    if name in LIST_FIELDS:
        if value.startswith("["):
            try:
                parsed = json.loads(value)
            except json.JSONDecodeError:
                return value  # AlertIn refuses it: "Input should be a valid list"
            return parsed
        return [part.strip() for part in value.split("|") if part.strip()]
    return value


def read_rows(data: bytes | str) -> tuple[list[int], list[dict], list[RowError]]:
    """Parse the file: (line number of each row, row dicts, row-shape errors).

    Raises CsvRefused for problems with the file as a whole.
    """
    text = _decode(data)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise CsvRefused(["The file is empty; it needs a header line and at least one row."]) from None
    except csv.Error as exc:
        raise CsvRefused([f"line 1: the header cannot be read as CSV ({exc})."]) from None
    header = [name.strip() for name in header]
    problems = []
    unknown = [name for name in header if name not in ALL_FIELDS]
    for name in unknown:
        problems.append(f"line 1: unknown column {name!r}" if name else "line 1: a column has no name")
    repeated = sorted({name for name in header if name and header.count(name) > 1})
    problems += [f"line 1: column {name!r} appears more than once" for name in repeated]
    problems += [f"line 1: missing required column {name!r}" for name in REQUIRED_FIELDS if name not in header]
    if problems:
        problems.append(f"Expected columns: {', '.join(REQUIRED_FIELDS)}; optional: {', '.join((*SCORE_NAMES, *LINK_NAMES))}.")
        raise CsvRefused(problems)

    numbers: list[int] = []
    rows: list[dict] = []
    errors: list[RowError] = []
    last_line = reader.line_num
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise CsvRefused([f"line {reader.line_num}: cannot be read as CSV ({exc})."]) from None
        line = last_line + 1  # a quoted cell may span lines: number a row by its first line
        last_line = reader.line_num
        if not any(cell.strip() for cell in cells):
            continue  # blank lines are not rows
        if len(cells) > len(header):
            errors.append(RowError(line, "", f"has {len(cells)} values but the header has {len(header)} columns."))
            continue
        numbers.append(line)
        rows.append({name: value for name, value in
                     ((name, _cell(name, raw)) for name, raw in zip(header, cells, strict=False))
                     if value is not None})
        if len(rows) > MAX_ROWS:
            raise CsvRefused([f"The file has more than {MAX_ROWS:,} rows; split it."])
    if not rows and not errors:
        raise CsvRefused(["The file has a header but no rows."])
    return numbers, rows, errors


def import_alerts_csv(*, actor, data: bytes | str, skip_invalid: bool = False, via: str = "csv") -> ImportReport:
    """Validate every row, then import all of them, the valid ones (skip_invalid) or none.

    Raises CsvRefused when the file as a whole is unusable.
    """
    from casework.fraud.services import alerts_create_bulk

    numbers, rows, errors = read_rows(data)
    report = ImportReport(rows=len(rows) + len({e.line for e in errors}))
    valid, field_errors = alerts_validate(rows, numbers=numbers, label="line")
    for key, messages in field_errors.items():
        where, _, name = key.partition(": ")
        line = int(where.split()[1])
        errors.extend(RowError(line, name, message) for message in messages)
    report.errors = sorted(errors, key=lambda e: (e.line, e.field))
    if report.errors and not skip_invalid:
        report.refused = True
        return report
    if valid:
        row_at = dict(zip(numbers, rows, strict=True))
        good = [number for number, _ in valid]
        for start in range(0, len(good), COMMIT_BATCH):
            batch = good[start:start + COMMIT_BATCH]
            report.created += alerts_create_bulk(actor=actor, rows=[row_at[n] for n in batch], numbers=batch,
                                                 label="line", via=via)
    return report


def import_alerts_file(*, actor, file: IO[bytes], skip_invalid: bool = False, via: str = "csv") -> ImportReport:
    return import_alerts_csv(actor=actor, data=file.read(), skip_invalid=skip_invalid, via=via)

