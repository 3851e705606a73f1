"""Replacing one benchmark's block of figures in bench/README.md, between its markers."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parent / "README.md"


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:results:start -->", f"<!-- {name}:results:end -->"


def write_block(name: str, text: str, readme: Path = README) -> None:
    start, end = markers(name)
    current = readme.read_text() if readme.exists() else ""
    if start not in current or end not in current:
        raise SystemExit(f"{readme} has no {start} ... {end} markers to replace.")
    head, rest = current.split(start, 1)
    _, tail = rest.split(end, 1)
    readme.write_text(f"{head}{start}\n{text}\n{end}{tail}")
