"""A lifecycle drawn as SVG from its table: states in columns (Lifecycle.layers: forward
moves point right), moves as arrows, moves back bowing below. Computed on the server, so the page needs no script
(the CSP allows none inline) and the drawing can never disagree with the table."""

from __future__ import annotations

from dataclasses import dataclass

from casework.cases.lifecycle.table import Lifecycle

BOX_W, BOX_H = 170, 46
COL_GAP, ROW_GAP = 48, 26
PAD = 16
# A cubic curve whose two control points sit at `bow` reaches 3/4 of the way there.
REACH = 0.75


@dataclass(frozen=True)
class Box:
    key: str
    label: str
    x: int
    y: int
    final: bool
    initial: bool

    @property
    def cx(self) -> int:
        return self.x + BOX_W // 2

    @property
    def cy(self) -> int:
        return self.y + BOX_H // 2


@dataclass(frozen=True)
class Arrow:
    path: str
    by: str
    title: str
    back: bool


@dataclass(frozen=True)
class Diagram:
    width: int
    height: int
    boxes: list[Box]
    arrows: list[Arrow]


def _lines(label: str, width: int = 21) -> list[str]:
    """The label in at most two lines of about `width` characters."""
    words, lines = label.split(), [""]
    for word in words:
        if lines[-1] and len(lines[-1]) + 1 + len(word) > width and len(lines) < 2:
            lines.append(word)
        else:
            lines[-1] = f"{lines[-1]} {word}".strip()
    return lines


def diagram(lifecycle: Lifecycle) -> Diagram:
    depths = lifecycle.layers()
    # A state no move reaches still gets drawn, in a last column, so the page shows the defect.
    last = max(depths.values(), default=0) + 1
    columns: dict[int, list[str]] = {}
    for state in lifecycle.states:
        columns.setdefault(depths.get(state.key, last), []).append(state.key)
    where: dict[str, Box] = {}
    for col, keys in sorted(columns.items()):
        for row, key in enumerate(keys):
            state = lifecycle.state(key)
            where[key] = Box(key, state.label, PAD + col * (BOX_W + COL_GAP), row * (BOX_H + ROW_GAP),
                             state.final, key == lifecycle.initial)
    arrows, lowest, highest = [], 0.0, 0.0
    for t in lifecycle.transitions:
        a, b = where[t.source], where[t.target]
        back = b.x <= a.x
        skips = b.x - a.x > BOX_W + COL_GAP
        if not back and skips and a.y == b.y:
            # Past the boxes between them: over the top, higher the further it goes.
            x1, x2, y = a.cx + 12, b.cx - 12, a.y
            bow = y - 14 - (b.x - a.x) // 16
            highest = min(highest, y + REACH * (bow - y))
            path = (x1, y, x1, bow, x2, bow, x2, y)
        elif not back:
            x1, y1, x2, y2 = a.x + BOX_W, a.cy, b.x, b.cy
            mid = (x1 + x2) // 2
            path = (x1, y1, mid, y1, mid, y2, x2, y2)
        else:
            # Backwards or within a column: leave from the bottom, arrive at the bottom, bowing down.
            x1, y1, x2, y2 = a.cx + 12, a.y + BOX_H, b.cx - 12, b.y + BOX_H
            bow = max(y1, y2) + 30 + abs(a.x - b.x) // 12
            lowest = max(lowest, max(y1, y2) + REACH * (bow - max(y1, y2)))
            path = (x1, y1, x1, bow, x2, bow, x2, y2)
        by = ", ".join(sorted(t.by))
        title = f"{a.label} → {b.label}: by {by}" + (f" ({t.note})" if t.note else "")
        arrows.append((path, "person" if t.by == {"person"} else "any", title, back))
    # Room above the first row for the highest arc, and below the last for the lowest.
    top = PAD + int(-highest) + 4
    boxes = [Box(b.key, b.label, b.x, b.y + top, b.final, b.initial) for b in where.values()]
    drawn = [Arrow("M{},{} C{},{} {},{} {},{}".format(*[v + (top if i % 2 else 0) for i, v in enumerate(path)]),
                   by, title, back) for path, by, title, back in arrows]
    width = max(b.x for b in boxes) + BOX_W + PAD
    height = top + int(max(lowest, max(b.y - top for b in boxes) + BOX_H)) + PAD + 4
    return Diagram(width, height, boxes, drawn)


def box_lines(box: Box) -> list[tuple[int, str]]:
    """(y, text) of each line of a box's label, centred vertically."""
    lines = _lines(box.label)
    first = box.cy - (len(lines) - 1) * 8 + 4
    return [(first + i * 16, text) for i, text in enumerate(lines)]
