// The queue's bulk bar: select all on the page, the count of selected rows, the fields the
// chosen action needs, and the address the confirmation returns to. Delegated from the
// document: htmx swaps the rows when the filters change.
(function () {
  function boxes() { return document.querySelectorAll('tr.queue-row input[type=checkbox][name=references]'); }

  // "Select all N matching": the server takes every case the filters match (up to its limit).
  function matching() { var m = document.getElementById('bulk-all-matching'); return m && m.value === '1'; }
  function setMatching(on) {
    var m = document.getElementById('bulk-all-matching');
    if (m) m.value = on ? '1' : '';
  }

  function refresh() {
    var all = boxes();
    var checked = Array.prototype.filter.call(all, function (b) { return b.checked; }).length;
    if (checked < all.length) setMatching(false);
    var more = document.getElementById('select-matching');
    if (more) more.hidden = !(all.length > 0 && checked === all.length);
    var button = document.getElementById('select-matching-button');
    var count = document.getElementById('bulk-count');
    if (count) count.textContent = (matching() && button ? 'All ' + button.dataset.count : checked) + ' selected';
    if (button) button.disabled = matching();
    var apply = document.getElementById('bulk-apply');
    if (apply) apply.disabled = checked === 0;
    var selectAll = document.getElementById('select-all');
    if (selectAll) {
      selectAll.checked = all.length > 0 && checked === all.length;
      selectAll.indeterminate = checked > 0 && checked < all.length;
    }
    Array.prototype.forEach.call(all, function (b) {
      var row = b.closest('tr');
      if (row) row.classList.toggle('selected', b.checked);
    });
  }

  function showFields() {
    var action = document.getElementById('bulk-action');
    if (!action) return;
    document.querySelectorAll('#bulk-form .bulk-field').forEach(function (field) {
      var on = field.dataset.for === action.value;
      field.hidden = !on;
      field.querySelectorAll('select, input').forEach(function (el) { el.disabled = !on; });
    });
    var reason = document.getElementById('bulk-reason');
    if (reason) reason.required = action.value === 'close';
  }

  document.addEventListener('click', function (event) {
    if (event.target.id !== 'select-matching-button') return;
    setMatching(true);
    refresh();
  });

  document.addEventListener('change', function (event) {
    var target = event.target;
    if (target.id === 'select-all') {
      boxes().forEach(function (b) { b.checked = target.checked; });
      refresh();
    } else if (target.name === 'references') {
      refresh();
    } else if (target.id === 'bulk-action') {
      showFields();
    }
  });

  // The confirmation returns to the queue as it is now (htmx pushed the filters' address).
  document.addEventListener('submit', function (event) {
    if (event.target.id === 'save-view-form') {
      var query = document.getElementById('save-view-query');
      if (query) query.value = window.location.search.replace(/^\?/, '');
    }
    if (event.target.id !== 'bulk-form') return;
    var next = document.getElementById('bulk-next');
    if (next) next.value = window.location.pathname + window.location.search;
  }, true);
  document.addEventListener('htmx:configRequest', function (event) {
    if (event.detail.elt && event.detail.elt.id === 'bulk-form') {
      event.detail.parameters.next = window.location.pathname + window.location.search;
    }
  });

  // The confirmation arrives: its button takes the focus (Enter confirms, Tab reaches Cancel).
  document.addEventListener('htmx:afterSwap', function (event) {
    if (event.detail.target && event.detail.target.id === 'bulk-panel') {
      var button = document.getElementById('bulk-confirm-button');
      if (button) { button.focus(); button.scrollIntoView({block: 'nearest'}); }
    }
    if (event.detail.target && event.detail.target.id === 'queue-results') {
      setMatching(false);
      refresh();
    }
  });

  // Esc in the confirmation cancels it: the panel empties and the focus returns to the bar.
  document.addEventListener('keydown', function (event) {
    if (event.key !== 'Escape') return;
    var panel = document.getElementById('bulk-panel');
    if (!panel || !panel.contains(document.activeElement)) return;
    panel.innerHTML = '';
    var apply = document.getElementById('bulk-apply');
    if (apply) apply.focus();
  });

  function init() { showFields(); refresh(); }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init); else init();
})();
