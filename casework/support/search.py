"""Knowledge-base search: one interface, two engines.

On PostgreSQL, full-text search: each article's `search_vector` (title weighted A, body B,
English configuration) is kept up to date by `kb_index_refresh` and has a GIN index
(migration 0002); a query matches an article sharing any of its terms, ranked by ts_rank.
On SQLite, the same results shape from a simple ranking in Python: each query term found
in the title counts 2, in the body 1 (prefix match after a crude English stemming), over
the category's articles, which a knowledge base keeps few enough for that.
Scores are 0..1 on both engines: 1.0 when every query term is in the title, 0.5 when every
term is in the body (see _coverage).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import connection

from casework.support.models import KBArticle

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
STOPWORDS = frozenset("""
a an and are as at be been but by can could did do does for from had has have how i if in into is it its
me my no not of on or our please so than that the their them then there these they this to was we were
what when where which who why will with would you your hi hello thanks thank regards dear help hey just
""".split())
MAX_TERMS = 12


@dataclass(frozen=True)
class Hit:
    article_id: str
    title: str
    category: str
    score: float
    snippet: str

    def as_dict(self) -> dict:
        return {"id": self.article_id, "title": self.title, "category": self.category,
                "score": self.score, "snippet": self.snippet}


def query_terms(query: str) -> list[str]:
    """The query's distinct content words, lower-cased, in order, at most MAX_TERMS."""
    terms: list[str] = []
    for word in _WORD.findall((query or "").lower()):
        if len(word) > 1 and word not in STOPWORDS and word not in terms:
            terms.append(word)
    return terms[:MAX_TERMS]


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def kb_search(query: str, *, category: str | None = None, limit: int = 5) -> list[Hit]:
    terms = query_terms(query)
    if not terms:
        return []
    articles = KBArticle.objects.all()
    if category:
        articles = articles.filter(category=category)
    if connection.vendor == "postgresql":
        return _search_postgresql(articles, terms, limit)
    return _search_python(articles, terms, limit)


def _snippet(body: str) -> str:
    return body[:160] + ("…" if len(body) > 160 else "")


def _search_postgresql(articles, terms: list[str], limit: int) -> list[Hit]:
    """Matched by the database (GIN index) and scored like the SQLite path
    so that a score means the same on both."""
    from functools import reduce
    from operator import or_

    from django.contrib.postgres.search import SearchQuery, SearchRank

    query = reduce(or_, (SearchQuery(term, config="english") for term in terms))
    # The database finds the candidates (the GIN index) and ranks them; the final order is the
    # same score as SQLite's, ts_rank breaking ties, so both engines agree on what is best.
    rows = list(articles.filter(search_vector=query)
                .annotate(rank=SearchRank("search_vector", query))
                .order_by("-rank", "article_id")[:max(limit * 4, 20)])
    stems = [_stem(t) for t in terms]
    scored = [(max(0.01, _coverage(stems, r)), r) for r in rows]
    scored.sort(key=lambda pair: (-pair[0], -pair[1].rank, pair[1].article_id))
    return [Hit(r.article_id, r.title, r.category, score, _snippet(r.body)) for score, r in scored[:limit]]


def _coverage(stems: list[str], article) -> float:
    """Title hits count 2, body hits 1, out of 2 per term: 1.0 is every term in the title,
    0.5 every term in the body (or half of them in the title)."""
    title = {_stem(w) for w in query_terms(article.title)} | set(query_terms(article.title))
    body_words = _WORD.findall(article.body.lower())
    body = {_stem(w) for w in body_words} | set(body_words)
    points = 0.0
    for stem in stems:
        if any(w.startswith(stem) for w in title):
            points += 2
        elif any(w.startswith(stem) for w in body):
            points += 1
    return round(points / (2 * len(stems)), 3) if stems else 0.0


def _search_python(articles, terms: list[str], limit: int) -> list[Hit]:
    stems = [_stem(t) for t in terms]
    scored = [(score, a) for a in articles.only("article_id", "title", "category", "body")
              if (score := _coverage(stems, a)) > 0]
    scored.sort(key=lambda pair: (-pair[0], pair[1].article_id))
    return [Hit(a.article_id, a.title, a.category, score, _snippet(a.body)) for score, a in scored[:limit]]


def kb_index_refresh(article_ids: list[int] | None = None) -> None:
    """Recompute search vectors on PostgreSQL (after a save or an import); nothing on SQLite."""
    if connection.vendor != "postgresql":
        return
    from django.contrib.postgres.search import SearchVector

    rows = KBArticle.objects.all() if article_ids is None else KBArticle.objects.filter(pk__in=article_ids)
    rows.update(search_vector=SearchVector("title", weight="A", config="english")
                + SearchVector("body", weight="B", config="english"))
