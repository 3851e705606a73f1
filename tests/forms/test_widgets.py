"""casework/widgets.py: QuickSelect writes what Django's select templates write, byte for byte."""

from __future__ import annotations

import pytest
from django import forms

from casework.widgets import QuickSelect

CHOICES = [("", "Any"), ("a", "Plain"), ("b&c", 'Quote " and <tag>'), (3, "A number")]
GROUPED = [("", "Pick one"), ("Fraud", [("confirmed", "Confirmed"), ("legit", "Legit")]),
           ("Support", [("sent", "Reply sent")])]


@pytest.mark.parametrize(("choices", "value", "attrs"), [
    (CHOICES, "", {}),
    (CHOICES, "b&c", {"id": "id_x", "aria-label": 'Say "which"', "required": True, "disabled": False}),
    (CHOICES, 3, {"data-n": 0}),
    (GROUPED, "legit", {"id": "id_outcome"}),
    ([], None, {}),
])
def test_it_renders_what_djangos_select_renders(choices, value, attrs):
    assert QuickSelect(choices=choices).render("f", value, attrs) == \
        forms.Select(choices=choices).render("f", value, attrs)


def test_the_queue_filters_render_as_before(rf, alice):
    from casework.cases.filters import CaseFilter
    from casework.cases.selectors import case_list

    request = rf.get("/cases/", {"status": "new", "ordering": "priority", "assignee": "alice"})
    request.user = alice
    form = CaseFilter(request.GET, queryset=case_list(alice), request=request).form
    for name in ("case_type", "status", "priority", "sla", "action", "assignee", "ordering"):
        field = form[name]
        assert isinstance(field.field.widget, QuickSelect)
        widget = field.field.widget
        attrs = {**field.build_widget_attrs({}), "id": field.auto_id}
        context = widget.get_context(field.html_name, field.value(), attrs)
        slow = forms.Widget._render(widget, widget.template_name, context)  # through the templates
        assert str(field) == slow, name
    assert '<option value="alice" selected>alice</option>' in str(form["assignee"])
