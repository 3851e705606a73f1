"""axe-core in the browser tests (issue 31): the vendored, pinned copy, run for WCAG 2.0 and 2.1,
levels A and AA, and its findings as one line per element.

The script is never served to users: the tests evaluate it in the page they check, when they
first need it there (page.evaluate is not subject to the page's Content-Security-Policy, which
allows no inline script: add_script_tag(content=...) would be blocked and reported).
"""

from __future__ import annotations

from pathlib import Path

AXE_VERSION = "4.14.1"
AXE_JS = Path(__file__).parent / "vendor" / f"axe-core-{AXE_VERSION}" / "axe.min.js"
WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]

# Resolved in the page: the violations of the given context (a CSS selector, or the whole
# document), one entry per rule with the elements that break it.
_RUN = """async ([selector, tags]) => {
  const context = selector ? {include: [selector]} : document;
  const result = await axe.run(context, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
  return result.violations.map(v => ({
    rule: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.join(' '), html: n.html.replace(/\\s+/g, ' ').slice(0, 160)})),
  }));
}"""

_source: str | None = None


def axe_source() -> str:
    """The script's source (read once per session)."""
    global _source
    if _source is None:
        _source = AXE_JS.read_text(encoding="utf-8")
    return _source


def axe_violations(page, selector: str | None = None) -> list[dict]:
    """WCAG 2.1 A and AA violations on the page (or inside `selector`), as axe reports them."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(axe_source())  # evaluate is not subject to the page's CSP either
    return page.evaluate(_RUN, [selector, WCAG_21_AA])


def describe(violations: list[dict], where: str) -> list[str]:
    """One line per offending element: where, the rule, its impact, the element and its HTML."""
    return [f"{where}: {v['rule']} ({v['impact']}: {v['help']}) at {node['target']}  {node['html']}"
            for v in violations for node in v["nodes"]]
