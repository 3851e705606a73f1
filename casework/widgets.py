"""A <select> built in Python, byte for byte what Django's select.html renders (issue 29).

Django renders a select through three templates, one include per option and one more for
each option's attributes: about 0.8 ms for the queue's seven filters on every page, most of
the filter form's cost. Building the same string here costs a tenth of that.
tests/cases/test_widgets.py compares the two, with groups, selection and attributes.
"""

from __future__ import annotations

from django import forms
from django.utils.html import conditional_escape
from django.utils.safestring import mark_safe

SELECT_TEMPLATE = "django/forms/widgets/select.html"
OPTION_TEMPLATE = "django/forms/widgets/select_option.html"


def _attrs(attrs: dict) -> str:
    # attrs.html: False leaves the attribute out, True writes its name alone.
    return "".join(
        f" {conditional_escape(name)}" + ("" if value is True else f'="{conditional_escape(str(value))}"')
        for name, value in attrs.items() if value is not False
    )


def select_html(widget: dict) -> str | None:
    """The select for a widget context; None if an option uses another template."""
    parts = [f'<select name="{conditional_escape(widget["name"])}"{_attrs(widget["attrs"])}>']
    for group_name, options, _index in widget["optgroups"]:
        if group_name:
            parts.append(f'\n  <optgroup label="{conditional_escape(group_name)}">')
        for option in options:
            if option["template_name"] != OPTION_TEMPLATE:
                return None
            parts.append(f'\n  <option value="{conditional_escape(str(option["value"]))}"{_attrs(option["attrs"])}>'
                         f'{conditional_escape(option["label"])}</option>\n')
        if group_name:
            parts.append("\n  </optgroup>")
    parts.append("\n</select>")
    return "".join(parts)


class QuickSelect(forms.Select):
    """forms.Select with the same HTML, built without templates (see the module docstring)."""

    def _render(self, template_name, context, renderer=None):
        html = select_html(context["widget"]) if template_name == SELECT_TEMPLATE else None
        return mark_safe(html) if html is not None else super()._render(template_name, context, renderer)
