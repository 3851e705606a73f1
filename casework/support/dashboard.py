"""What support adds to the team's dashboard (casework.cases.types.Panel, audience "team"):
how often an auto-answer solved the customer's question, by their own answer on the reply's
"Did this answer your question?" link (casework.support.feedback), per category and per KB
article, and the articles whose answers customers rejected. Counts over TicketFeedback only
(indexed on auto_sent, category and on article_id), one query per table, of the tickets whose
cases the person may see (casework.cases.visibility: a restricted ticket counts for its named
people only)."""

from __future__ import annotations

from django.db.models import Count, Q

from casework.cases.types import Panel
from casework.cases.visibility import visible_q


def _rate(solved: int, answered: int) -> float | None:
    return round(100.0 * solved / answered, 1) if answered else None


def auto_answer_resolution(user=None) -> dict:
    """{"categories": [...], "articles": [...], "rejected": [...], "total": {...}} over the
    customers' answers to auto-sent replies. Each row: key, answered, solved, not_solved, rate (%)."""
    from casework.support.models import KBArticle, TicketFeedback

    answers = TicketFeedback.objects.filter(auto_sent=True)
    if user is not None:
        answers = answers.filter(visible_q(user, "ticket__case__"))
    # Named n_*: "solved" is a field of the model, and an aggregate may not shadow it.
    counts = {"n_answered": Count("pk"), "n_solved": Count("pk", filter=Q(solved=True)),
              "n_not_solved": Count("pk", filter=Q(solved=False))}

    def named(row: dict) -> dict:
        out = {k[2:]: row[k] for k in counts}
        return out | {"rate": _rate(out["solved"], out["answered"])}

    def rows(field: str) -> list[dict]:
        return [{"key": row[field] or "", **named(row)}
                for row in answers.values(field).annotate(**counts).order_by(field)]

    articles = [r for r in rows("article_id") if r["key"]]
    titles = dict(KBArticle.objects.filter(article_id__in=[a["key"] for a in articles])
                  .values_list("article_id", "title"))
    for a in articles:
        a["title"] = titles.get(a["key"], "")
    total = named(answers.aggregate(**counts))
    return {
        "categories": [r | {"key": r["key"] or "untriaged"} for r in rows("category")],
        "articles": articles,
        # Articles customers said did not solve their question, most rejections first.
        "rejected": sorted((a for a in articles if a["not_solved"]), key=lambda a: (-a["not_solved"], a["key"])),
        "total": total,
    }


def panel_rows(user) -> list[dict]:
    figures = auto_answer_resolution(user)
    return [figures] if figures["total"]["answered"] else []


PANEL = Panel("support-auto-answers", "Auto-answers: did they answer the question?",
              "support/_dashboard_resolution.html", panel_rows, audience="team")
