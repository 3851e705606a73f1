"""A trace as a waterfall for people: each span a bar placed by when it started (from the
trace's first span) and as wide as it lasted, nested under its parent, with a readable name
and status. The raw attributes stay with each row for the page to fold away."""

from __future__ import annotations

from dataclasses import dataclass, field

from audit.tracing import trace_tree

# A bar never narrower than this share of the timeline, so a span of a few microseconds
# still shows where it happened.
MIN_WIDTH_PCT = 0.4
TICKS = 4

_KINDS = (("pipeline.", "pipeline", "Pipeline"), ("agent.tool.", "tool", "Tool"), ("tool.", "tool", "Tool"),
          ("agent.", "agent", "Agent"), ("llm.", "llm", "Model"), ("conversation.", "chat", "Conversation"),
          ("context.", "context", "Context"))


@dataclass
class Row:
    span_id: str
    parent_id: str | None
    depth: int
    name: str
    label: str
    kind: str
    offset_ms: float
    duration_ms: float
    offset_pct: float
    width_pct: float
    status: str  # "ok", "error" or "" (not set)
    status_text: str
    attributes: dict = field(default_factory=dict)
    events: list = field(default_factory=list)
    children: int = 0


@dataclass
class Waterfall:
    rows: list[Row]
    total_ms: float
    ticks: list[tuple[float, float]]  # (position %, milliseconds)

    @property
    def errors(self) -> int:
        return sum(1 for r in self.rows if r.status == "error")


def span_label(name: str, attributes: dict) -> tuple[str, str]:
    """(kind, label) for a span name: "tool.get_release_summary" -> ("tool", "Tool: get release summary")."""
    for prefix, kind, word in _KINDS:
        if name.startswith(prefix):
            rest = name[len(prefix):]
            if kind == "llm":
                model = attributes.get("llm.model") or attributes.get("gen_ai.request.model")
                provider = attributes.get("llm.provider")
                detail = " · ".join(str(v) for v in (provider, model) if v)
                return kind, f"Model {rest.replace('_', ' ')}" + (f" ({detail})" if detail else "")
            return kind, f"{word}: {rest.replace('_', ' ').replace('.', ' ')}"
    return "other", name.replace("_", " ")


def _status(span: dict) -> tuple[str, str]:
    attrs = span.get("attributes") or {}
    if span.get("status") == "ERROR":
        return "error", span.get("status_description") or "failed"
    if str(attrs.get("tool.success")).lower() == "false" or str(attrs.get("tool.status", "")).lower() in ("error", "failed"):
        return "error", str(attrs.get("tool.error_type") or "failed")
    if span.get("status") == "OK":
        return "ok", ""
    return "", ""


def waterfall(spans: list[dict]) -> Waterfall:
    """Spans (as audit.tracing.read_trace gives them) laid out on one timeline."""
    # Siblings in start order; of two that started together, the longer first.
    tree = trace_tree(sorted(spans, key=lambda s: (s["start_ns"] or 0, -(s["end_ns"] or 0))))
    if not tree:
        return Waterfall(rows=[], total_ms=0.0, ticks=[])
    start = min(s["start_ns"] or 0 for s in tree)
    end = max(max(s["end_ns"] or 0, s["start_ns"] or 0) for s in tree)
    total_ns = max(end - start, 1)
    children: dict[str, int] = {}
    for s in tree:
        if s.get("parent_id"):
            children[s["parent_id"]] = children.get(s["parent_id"], 0) + 1
    rows = []
    for s in tree:
        begin = (s["start_ns"] or start) - start
        length = max((s["end_ns"] or 0) - (s["start_ns"] or 0), 0)
        offset_pct = round(100 * begin / total_ns, 2)
        width_pct = round(max(100 * length / total_ns, MIN_WIDTH_PCT), 2)
        width_pct = min(width_pct, round(100 - offset_pct, 2)) if offset_pct < 100 else MIN_WIDTH_PCT
        kind, label = span_label(s["name"], s.get("attributes") or {})
        status, status_text = _status(s)
        rows.append(Row(
            span_id=s["span_id"], parent_id=s.get("parent_id"), depth=s["depth"], name=s["name"], label=label,
            kind=kind, offset_ms=round(begin / 1e6, 3), duration_ms=round(length / 1e6, 3),
            offset_pct=min(offset_pct, 100 - MIN_WIDTH_PCT), width_pct=max(width_pct, MIN_WIDTH_PCT),
            status=status, status_text=status_text, attributes=s.get("attributes") or {},
            events=s.get("events") or [], children=children.get(s["span_id"], 0)))
    total_ms = round(total_ns / 1e6, 3)
    ticks = [(round(100 * i / TICKS, 2), round(total_ms * i / TICKS, 1)) for i in range(TICKS + 1)]
    return Waterfall(rows=rows, total_ms=total_ms, ticks=ticks)
