"""The inbound email endpoints: django-anymail's inbound webhooks for Postmark, Mailgun,
SendGrid and Amazon SES, and raw RFC 5322 posts (an SMTP relay: Postfix piping to curl, or
any provider's raw MIME option), each authenticated its own way:

  postmark, sendgrid, amazon-ses, raw   HTTP basic auth (INBOUND_EMAIL_WEBHOOK_SECRET)
  mailgun                               HMAC signature (MAILGUN_WEBHOOK_SIGNING_KEY), and
                                        basic auth too when a secret is set

A post that fails its check is answered 400 (anymail's validation failure); a raw message
that is refused (empty, not an e-mail, no sender, no text) is stored and answered 422 naming why; a provider whose
check is not configured refuses every post (403), never accepting unsigned mail. Each accepted
message goes to casework.support.inbound.email_receive; a retry of the same Message-ID is a
no-op there, so the provider may repeat a post safely.
"""

from __future__ import annotations

from anymail.inbound import AnymailInboundMessage
from anymail.signals import AnymailInboundEvent, EventType, inbound
from anymail.webhooks.amazon_ses import AmazonSESInboundWebhookView
from anymail.webhooks.base import AnymailBaseWebhookView
from anymail.webhooks.mailgun import MailgunInboundWebhookView
from anymail.webhooks.postmark import PostmarkInboundWebhookView
from anymail.webhooks.sendgrid import SendGridInboundWebhookView
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.dispatch import receiver
from django.http import Http404, JsonResponse
from django.views.decorators.csrf import csrf_exempt


class RawMimeInboundWebhookView(AnymailBaseWebhookView):
    """A whole RFC 5322 message as the request body (Content-Type message/rfc822 or any).

    The caller is a relay that can bounce or retry, so it is told when the message is refused
    (an empty post, binary noise, headers without text, a broken MIME structure): 422 with the
    reason, the refused message stored all the same (as email_receive stores it). Anything
    else it took (a ticket, a join, held, a dropped auto-reply) is a 200."""

    esp_name = "Raw MIME"
    signal = inbound

    def post(self, request, *args, **kwargs):
        response = super().post(request, *args, **kwargs)
        record = getattr(request, "inbound_record", None)
        if record is not None and record.outcome == record.Outcome.REFUSED:
            return JsonResponse({"detail": f"The message was refused: {record.note}", "code": "refused",
                                 "outcome": record.outcome, "message_id": record.message_id}, status=422)
        return response

    def parse_events(self, request):
        message = AnymailInboundMessage.parse_raw_mime_bytes(request.body)
        return [AnymailInboundEvent(event_type=EventType.INBOUND, timestamp=None, event_id=None, esp_event=request,
                                    message=message)]


# provider key -> (anymail's view, what must be configured to accept a post)
PROVIDERS = {
    "raw": (RawMimeInboundWebhookView, "INBOUND_EMAIL_WEBHOOK_SECRET"),
    "postmark": (PostmarkInboundWebhookView, "INBOUND_EMAIL_WEBHOOK_SECRET"),
    "sendgrid": (SendGridInboundWebhookView, "INBOUND_EMAIL_WEBHOOK_SECRET"),
    "amazon-ses": (AmazonSESInboundWebhookView, "INBOUND_EMAIL_WEBHOOK_SECRET"),
    "mailgun": (MailgunInboundWebhookView, "MAILGUN_WEBHOOK_SIGNING_KEY"),
}
OURS = {view: key for key, (view, _) in PROVIDERS.items()}


def _configured(provider: str) -> bool:
    anymail = getattr(settings, "ANYMAIL", {})
    if provider == "mailgun":
        return bool(anymail.get("MAILGUN_WEBHOOK_SIGNING_KEY"))
    return bool(anymail.get("WEBHOOK_SECRET"))


@csrf_exempt
@login_not_required
def inbound_email(request, provider: str):
    if provider not in PROVIDERS:
        raise Http404("No such inbound email provider.")
    view, setting = PROVIDERS[provider]
    if not _configured(provider):
        return JsonResponse({"detail": f"Inbound email from {provider} is not configured ({setting} is not set): "
                                       "every post is refused.", "code": "not_configured"}, status=403)
    return view.as_view()(request)


@receiver(inbound, dispatch_uid="support_inbound_email")
def _on_inbound(sender, event, esp_name, **kwargs):
    """One message from one of our endpoints (anymail has validated the post)."""
    if sender not in OURS:
        return
    from casework.support.inbound import email_receive

    record = email_receive(message=event.message, provider=OURS[sender])
    if sender is RawMimeInboundWebhookView:
        # The raw view answers with what became of it (esp_event is its request).
        event.esp_event.inbound_record = record
