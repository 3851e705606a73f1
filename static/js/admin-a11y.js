// Django's admin (its own templates, issue 31): names for the controls its widgets leave
// without one, so the admin passes the same WCAG 2.1 AA check as the rest of Casework.
//  - a tabular inline's fields are named by their column's heading;
//  - a split date and time field's two inputs by the field's label and "Date" / "Time";
//  - an autocomplete (select2) by the label of the select it replaces;
//  - filter_horizontal's search icons carry an aria-label a plain span may not have: an image.
(function () {
  'use strict';

  function words(el) {
    return (el ? el.textContent : '').replace(/\s+/g, ' ').replace(/[\s:?*]+$/, '').trim();
  }

  function name(el, text) {
    if (el && text && !el.hasAttribute('aria-label') && !el.hasAttribute('aria-labelledby') &&
        !(el.id && document.querySelector('label[for="' + el.id + '"]'))) {
      el.setAttribute('aria-label', text);
    }
  }

  function labelId(control) {
    var label = control.id && document.querySelector('label[for="' + control.id + '"]');
    if (!label) return null;
    if (!label.id) label.id = control.id + '-label';
    return label.id;
  }

  function fix() {
    document.querySelectorAll('.tabular table').forEach(function (table) {
      var heads = {};
      table.querySelectorAll('thead th').forEach(function (th) {
        th.classList.forEach(function (c) { if (c.indexOf('column-') === 0) heads[c.slice(7)] = words(th); });
      });
      var deleteHead = words(table.querySelector('thead th:last-child'));
      table.querySelectorAll('tbody tr.form-row').forEach(function (row) {
        row.querySelectorAll('td').forEach(function (td) {
          var field = Array.prototype.filter.call(td.classList, function (c) { return c.indexOf('field-') === 0; })[0];
          var text = field ? heads[field.slice(6)] : td.classList.contains('delete') ? deleteHead : '';
          td.querySelectorAll('input:not([type=hidden]), select, textarea').forEach(function (control) { name(control, text); });
        });
      });
    });

    document.querySelectorAll('p.datetime').forEach(function (p) {
      var row = p.closest('.form-row, .fieldBox, td');
      var label = words(row && row.querySelector('label'));
      p.querySelectorAll('input').forEach(function (input) {
        var before = input.previousSibling;
        while (before && before.nodeType !== Node.TEXT_NODE) before = before.previousSibling;
        name(input, [label, words(before)].filter(Boolean).join(', '));
      });
    });

    document.querySelectorAll('select.admin-autocomplete').forEach(function (select) {
      var id = labelId(select);
      var box = select.nextElementSibling;
      if (!id || !box || !box.classList.contains('select2')) return;
      box.querySelectorAll('[role=combobox], [role=textbox]').forEach(function (el) {
        var rendered = el.getAttribute('role') === 'combobox' && box.querySelector('.select2-selection__rendered');
        el.setAttribute('aria-labelledby', rendered && rendered.id ? id + ' ' + rendered.id : id);
      });
    });

    document.querySelectorAll('span.help-tooltip[aria-label]:not([role])').forEach(function (span) {
      span.setAttribute('role', 'img');
    });
  }

  // After the admin's own scripts: select2 starts on DOM ready, the filter boxes on load.
  window.addEventListener('load', function () { setTimeout(fix, 0); });
  document.addEventListener('formset:added', function () { setTimeout(fix, 0); });
  document.addEventListener('change', function () { setTimeout(fix, 0); });
})();
