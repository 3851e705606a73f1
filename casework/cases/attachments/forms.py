from __future__ import annotations

from django import forms


class AttachmentForm(forms.Form):
    file = forms.FileField(allow_empty_file=True, label="Evidence file")
