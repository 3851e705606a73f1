"""Template replies for the offline specialists, in the languages the desk supports.

The article's title and snippet stay in English (the knowledge base is English); the
greeting and the frame around them are in the customer's language. Unknown languages get
the English template."""

from __future__ import annotations

TEMPLATES = {
    "en": {"hello": "Hello{name},", "bye": "Best regards,\nCustomer Support",
           "auto": "Thanks for reaching out. Our help article \"{title}\" answers this:\n{snippet}",
           "route": "Thanks for your message. A {area} specialist is looking into it and will get back to you soon.",
           "escalate": "Thanks for your message. We have passed it to a senior member of our team, "
                       "who will contact you personally.",
           "see": "Meanwhile, this article may help: \"{title}\"."},
    "es": {"hello": "Hola{name}:", "bye": "Saludos cordiales,\nAtención al cliente",
           "auto": "Gracias por escribirnos. Nuestro artículo de ayuda \"{title}\" responde a su consulta:\n{snippet}",
           "route": "Gracias por su mensaje. Un especialista de {area} lo está revisando y le responderá pronto.",
           "escalate": "Gracias por su mensaje. Lo hemos trasladado a un responsable de nuestro equipo, "
                       "que se pondrá en contacto con usted.",
           "see": "Mientras tanto, este artículo puede ayudarle: \"{title}\"."},
    "fr": {"hello": "Bonjour{name},", "bye": "Cordialement,\nLe support client",
           "auto": "Merci de nous avoir écrit. Notre article d'aide « {title} » répond à votre question :\n{snippet}",
           "route": "Merci pour votre message. Un spécialiste {area} l'examine et vous répondra rapidement.",
           "escalate": "Merci pour votre message. Nous l'avons transmis à un responsable de notre équipe, "
                       "qui vous contactera personnellement.",
           "see": "En attendant, cet article peut vous aider : « {title} »."},
    "de": {"hello": "Hallo{name},", "bye": "Mit freundlichen Grüßen\nIhr Kundensupport",
           "auto": "Danke für Ihre Nachricht. Unser Hilfeartikel „{title}“ beantwortet Ihre Frage:\n{snippet}",
           "route": "Danke für Ihre Nachricht. Ein Spezialist ({area}) prüft sie und meldet sich in Kürze.",
           "escalate": "Danke für Ihre Nachricht. Wir haben sie an eine verantwortliche Person in unserem Team "
                       "weitergegeben, die sich persönlich bei Ihnen meldet.",
           "see": "Bis dahin hilft Ihnen vielleicht dieser Artikel: „{title}“."},
    "pt": {"hello": "Olá{name},", "bye": "Atenciosamente,\nSuporte ao cliente",
           "auto": "Obrigado por nos escrever. Nosso artigo de ajuda \"{title}\" responde à sua dúvida:\n{snippet}",
           "route": "Obrigado pela sua mensagem. Um especialista de {area} está analisando e responderá em breve.",
           "escalate": "Obrigado pela sua mensagem. Encaminhamos para um responsável da nossa equipe, "
                       "que entrará em contato pessoalmente.",
           "see": "Enquanto isso, este artigo pode ajudar: \"{title}\"."},
    "th": {"hello": "สวัสดีค่ะ{name}", "bye": "ขอแสดงความนับถือ\nฝ่ายบริการลูกค้า",
           "auto": "ขอบคุณที่ติดต่อเรา บทความ \"{title}\" ตอบคำถามของคุณ:\n{snippet}",
           "route": "ขอบคุณสำหรับข้อความของคุณ ผู้เชี่ยวชาญด้าน {area} กำลังตรวจสอบและจะติดต่อกลับโดยเร็ว",
           "escalate": "ขอบคุณสำหรับข้อความของคุณ เราได้ส่งเรื่องให้หัวหน้าทีมซึ่งจะติดต่อคุณโดยตรง",
           "see": "ระหว่างนี้ บทความนี้อาจช่วยได้: \"{title}\""},
}


AREAS = {
    "es": {"billing": "facturación", "technical": "soporte técnico", "general": "atención general"},
    "fr": {"billing": "facturation", "technical": "technique", "general": "service client"},
    "de": {"billing": "Abrechnung", "technical": "Technik", "general": "Kundenservice"},
    "pt": {"billing": "faturamento", "technical": "suporte técnico", "general": "atendimento"},
    "th": {"billing": "การเรียกเก็บเงิน", "technical": "เทคนิค", "general": "บริการทั่วไป"},
}


def reply_for(action: str, *, language: str, area: str, article: dict | None, name: str = "") -> str:
    t = TEMPLATES.get(language, TEMPLATES["en"])
    area = AREAS.get(language, {}).get(area, area)
    first = (" " + name.split()[0]) if name else ""
    parts = [t["hello"].format(name=first)]
    if action == "auto_respond" and article:
        parts.append(t["auto"].format(title=article["title"], snippet=article.get("snippet", "")))
    elif action == "escalate_human":
        parts.append(t["escalate"])
    else:
        parts.append(t["route"].format(area=area))
        if article:
            parts.append(t["see"].format(title=article["title"]))
    parts.append(t["bye"])
    return "\n\n".join(parts)
