"""What support adds to the team's dashboard (casework.cases.types.Panel, audience "team"):
how often an auto-answer solved the customer's question, by their own answer on the reply's
"Did this answer your question?" link (casework.support.feedback), per category and per KB
article, and the articles whose answers customers rejected. Counts over TicketFeedback only
(indexed on auto_sent, category and on article_id), one query per table."""

from __future__ import annotations

from django.db.models import Count, Q

from casework.cases.types import Panel


def _rate(solved: int, answered: int) -> float | None:
    return round(100.0 * solved / answered, 1) if answered else None


def auto_answer_resolution() -> dict:
    """{"categories": [...], "articles": [...], "rejected": [...], "total": {...}} over the
    customers' answers to auto-sent replies. Each row: key, answered, solved, not_solved, rate (%)."""
    from casework.support.models import KBArticle, TicketFeedback

    answers = TicketFeedback.objects.filter(auto_sent=True)
    counts = {"answered": Count("pk"), "solved": Count("pk", filter=Q(solved=True)),
              "not_solved": Count("pk", filter=Q(solved=False))}

    def rows(field: str) -> list[dict]:
        out = []
        for row in answers.values(field).annotate(**counts).order_by(field):
            out.append({"key": row[field] or "", **{k: row[k] for k in counts},
                        "rate": _rate(row["solved"], row["answered"])})
        return out

    articles = [r for r in rows("article_id") if r["key"]]
    titles = dict(KBArticle.objects.filter(article_id__in=[a["key"] for a in articles])
                  .values_list("article_id", "title"))
    for a in articles:
        a["title"] = titles.get(a["key"], "")
    total = answers.aggregate(**counts)
    return {
        "categories": [r | {"key": r["key"] or "untriaged"} for r in rows("category")],
        "articles": articles,
        # Articles customers said did not solve their question, most rejections first.
        "rejected": sorted((a for a in articles if a["not_solved"]), key=lambda a: (-a["not_solved"], a["key"])),
        "total": total | {"rate": _rate(total["solved"], total["answered"])},
    }


def panel_rows(user) -> list[dict]:
    figures = auto_answer_resolution()
    return [figures] if figures["total"]["answered"] else []


PANEL = Panel("support-auto-answers", "Auto-answers: did they answer the question?",
              "support/_dashboard_resolution.html", panel_rows, audience="team")
