"""Conversations with a case's agent (seed 004's send_message, new_conversation), audited.

Asking (message_ask) saves the question and an empty answer, "answering", in one transaction,
and on commit queues the answer on the "chat" queue: a worker writes it (agents.chat.answering,
message_answer). An answer whose worker stopped (no progress for CHAT_ANSWER_STALE_SECONDS) is
failed by whoever looks at it next (message_expire_stale). The API's send_message
(message_send) asks and answers in the request, returning the complete answer.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from agents.chat.answering import message_answer
from agents.chat.models import ChatMessage, Conversation
from agents.llm.registry import get_provider
from audit.services import audit_record
from casework.errors import Conflict

QUESTION_MAX = 4000


@transaction.atomic
def conversation_start(*, actor, case) -> Conversation:
    """new_conversation: close the open one (kept) and start afresh."""
    closed = Conversation.objects.filter(case=case, user=actor, is_open=True).update(is_open=False)
    conversation = Conversation.objects.create(case=case, user=actor)
    audit_record(actor=actor, action="conversation.started", case=case, obj=conversation,
                 data={"closed_previous": bool(closed)})
    return conversation


def conversation_open(*, actor, case) -> Conversation:
    conversation = Conversation.objects.filter(case=case, user=actor, is_open=True).first()
    return conversation or conversation_start(actor=actor, case=case)


@transaction.atomic
def message_ask(*, actor, case, content: str, dispatch: bool = True) -> ChatMessage:
    """send_message, first half: the question and its empty answer ("answering"), audited;
    the answer is queued once this commits (unless `dispatch` is off: the caller answers)."""
    content = (content or "").strip()
    if not content:
        raise ValidationError({"content": "Ask a question."})
    if len(content) > QUESTION_MAX:
        raise ValidationError({"content": f"A question is at most {QUESTION_MAX} characters."})
    conversation = Conversation.objects.select_for_update().filter(case=case, user=actor, is_open=True).first()
    conversation = conversation or conversation_start(actor=actor, case=case)
    pending = conversation.messages.filter(status=ChatMessage.Status.ANSWERING).first()
    if pending is not None and not message_expire_stale(pending):
        raise Conflict("The agent is still answering your last question.", code="answering")
    question = ChatMessage(conversation=conversation, role=ChatMessage.Role.USER, content=content)
    question.full_clean()
    question.save()
    answer = ChatMessage.objects.create(conversation=conversation, role=ChatMessage.Role.ASSISTANT, content="",
                                        status=ChatMessage.Status.ANSWERING, provider=get_provider().name)
    audit_record(actor=actor, action="conversation.asked", case=case, obj=question,
                 data={"conversation": conversation.pk, "question": content[:1000], "answer": answer.pk})
    if dispatch:
        from agents.chat.tasks import chat_answer

        transaction.on_commit(lambda: chat_answer.delay(answer.pk))
    return answer


def message_send(*, actor, case, content: str) -> ChatMessage:
    """send_message for the API: the question, then the whole answer (or its error), both saved."""
    answer = message_ask(actor=actor, case=case, content=content, dispatch=False)
    message_answer(message_id=answer.pk)
    answer.refresh_from_db()
    return answer


@transaction.atomic
def message_expire_stale(message: ChatMessage) -> bool:
    """An answer with no progress for CHAT_ANSWER_STALE_SECONDS failed (its worker stopped, or
    its task was lost): say so, keeping what arrived. True if it was (or is now) not answering."""
    cutoff = timezone.now() - timedelta(seconds=settings.CHAT_ANSWER_STALE_SECONDS)
    if message.status != ChatMessage.Status.ANSWERING:
        return True
    if message.updated_at > cutoff:
        return False
    error = (f"The answer stopped: no progress for {settings.CHAT_ANSWER_STALE_SECONDS} s "
             f"({'its worker stopped' if message.started_at else 'no worker took it'}). Ask again.")
    done = ChatMessage.objects.filter(pk=message.pk, status=ChatMessage.Status.ANSWERING,
                                      updated_at__lte=cutoff).update(status=ChatMessage.Status.FAILED, error=error,
                                                                     updated_at=timezone.now())
    if done:
        message.refresh_from_db()
        conversation = message.conversation
        audit_record(actor="system", action="conversation.failed", case=conversation.case, obj=message,
                     data={"conversation": conversation.pk, "asked_by": conversation.user.get_username(),
                           "answer": message.content[:1000], "error": error, "error_type": "stalled"})
    return True
