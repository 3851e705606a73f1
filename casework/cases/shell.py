"""What case types add to every page's shell (templates/base.html): their stylesheets and
their links in the navigation bar. A type's badges show beyond its own pages (the queue, the
dashboard, search), so every registered sheet is linked on every page. A type registers both
from its AppConfig.ready; the shared template names no type."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

STYLESHEETS: list[str] = []


def stylesheet_register(path: str) -> None:
    """A static path, as for {% static %}: "fraud/fraud.css" in casework/fraud/static/."""
    if path not in STYLESHEETS:
        STYLESHEETS.append(path)


@dataclass(frozen=True)
class NavLink:
    label: str
    url_name: str  # reversed with no arguments: "fraud:patterns"
    visible: Callable[[Any], bool]  # visible(user)
    # Where the link is the current page: any view of this URL namespace, or this view name.
    current_app: str = ""
    current_url_name: str = ""
    # A count shown beside the label (requests waiting for a manager), and what it counts.
    count: Callable[[Any], int] | None = None
    count_label: str = ""
    order: int = 100


NAV_LINKS: list[NavLink] = []


def nav_link_register(link: NavLink) -> None:
    if all(existing.url_name != link.url_name for existing in NAV_LINKS):
        NAV_LINKS.append(link)
        NAV_LINKS.sort(key=lambda existing: existing.order)
