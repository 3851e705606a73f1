"""Who asked: "Ask the agent" answers a person, so its tools show only what that person may see
(casework.cases.visibility, the one rule).

The answer is written in a worker (agents.chat.answering). `asking(user)` holds the asker's id
around the tool loop; the runtime carries context variables into the loop's task
(agents.runtime.aio.submit) and each tool's thread (ToolRegistry.aexecute), where `asker()`
reads the person back from the database. Every chat tool goes through `for_the_asker`: with no
asker it refuses (fail closed), and a case it is asked about that the asker may not see is
answered as if it did not exist. The case's own pipelines call the same handlers unwrapped:
agents working a case read what they need.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace

from django.core.exceptions import PermissionDenied

from agents.runtime.tools import Tool

_asker_id: ContextVar[int | None] = ContextVar("chat_asker_id", default=None)


@contextmanager
def asking(user) -> Iterator[None]:
    """The tools run inside this block answer `user`."""
    token = _asker_id.set(user.pk)
    try:
        yield
    finally:
        _asker_id.reset(token)


def asker():
    """The person the running chat tool answers (read afresh: a deactivated person sees nothing)."""
    from django.contrib.auth.models import User

    pk = _asker_id.get()
    user = User.objects.filter(pk=pk).first() if pk is not None else None
    if user is None:
        raise PermissionDenied("A chat tool runs only for the person who asked.")
    return user


def visible_case(reference: str):
    """The case of this reference, when the asker may see it; else LookupError, the words a
    case that does not exist gets."""
    from casework.cases.models import Case
    from casework.cases.visibility import cases_visible_to

    case = cases_visible_to(asker(), Case.objects.filter(reference=reference.upper())).first()
    if case is None:
        raise LookupError(f"No case {reference!r}.")
    return case


def for_the_asker(tool: Tool) -> Tool:
    """The tool as "Ask the agent" runs it: only for an asker, and a case reference among its
    arguments only when the asker may see that case."""
    handler = tool.handler

    def guarded(args):
        reference = getattr(args, "reference", None)
        if reference is not None:
            visible_case(reference)
        else:
            asker()
        return handler(args)

    return replace(tool, handler=guarded)
