// Keyboard shortcuts (issue 14). On the queue: j / k move through the rows, Enter opens the
// focused case, a assigns it to you, x selects it. On a case page: a assigns the case to you,
// c focuses the comment box, d the decision form, 1-9 pick a tab. Everywhere: ? lists the keys,
// g q goes to the queue, g m to your cases. Keys typed into a field are left alone.
(function () {
  var KEYS = [
    ['j / k', 'Next / previous case in the queue'],
    ['Enter', 'Open the focused case'],
    ['x', 'Select the focused case for a bulk action'],
    ['a', 'Assign the focused or open case to me'],
    ['d', 'Go to the decision (case page)'],
    ['c', 'Write a comment (case page)'],
    ['1 – 9', 'Open a tab (case page)'],
    ['g then q / m', 'Go to the queue / my cases'],
    ['?', 'Show these keys'],
    ['Esc', 'Close this list']
  ];

  function typing(el) {
    if (!el) return false;
    var tag = el.tagName;
    // A ticked checkbox keeps the focus; j / k must still move on from it.
    if (tag === 'INPUT' && /^(checkbox|radio|button|submit|reset)$/.test(el.type)) return false;
    return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' || el.isContentEditable;
  }

  function rows() { return Array.prototype.slice.call(document.querySelectorAll('tr.queue-row')); }

  function currentRow() {
    var active = document.activeElement;
    return active && active.closest ? active.closest('tr.queue-row') : null;
  }

  function focusRow(row) {
    if (!row) return;
    rows().forEach(function (r) { r.classList.remove('kb-focus'); });
    row.setAttribute('tabindex', '-1');
    row.classList.add('kb-focus');
    row.focus();
    row.scrollIntoView({block: 'nearest'});
  }

  function move(step) {
    var all = rows();
    if (!all.length) return;
    var index = all.indexOf(currentRow());
    if (index < 0) index = step > 0 ? -1 : all.length;
    focusRow(all[Math.max(0, Math.min(all.length - 1, index + step))]);
  }

  function submit(form) {
    if (!form) return false;
    if (form.requestSubmit) form.requestSubmit(); else form.submit();
    return true;
  }

  function assignToMe() {
    var row = currentRow();
    var scope = row || document;
    var form = scope.querySelector('form[action$="/assign-to-me/"]');
    if (submit(form)) return;
    flash(row ? 'This case is already yours or closed.' : 'Nothing to assign here.');
  }

  var FIELD = 'select, textarea, input:not([type=hidden]), button';

  // The decision box's first field; where a type decides inside a tab (access: the advisory
  // report), the box links to that tab: open it and take its decision form's first field.
  function focusDecision() {
    var box = document.getElementById('decision');
    if (!box) return;
    var field = box.querySelector('form ' + FIELD.split(', ').join(', form '));
    var link = !field && box.querySelector('[data-open-tab]');
    if (link) {
      var tab = document.getElementById(link.dataset.openTab);
      var panel = tab && document.getElementById(tab.getAttribute('aria-controls'));
      if (tab) tab.click();
      var form = panel && (panel.querySelector('form.decision-form') || panel.querySelector('form[action*=decide]'));
      field = form && form.querySelector(FIELD);
    }
    (field || box).scrollIntoView({block: 'nearest'});
    if (field) field.focus(); else flash(box.querySelector('form') ? 'Nothing to decide here.' : 'There is no decision for you to make here.');
  }

  function focusComment() {
    var box = document.querySelector('#comments textarea');
    if (box) { box.scrollIntoView({block: 'center'}); box.focus(); }
  }

  function openTab(n) {
    var tabs = document.querySelectorAll('[role=tablist] [role=tab]');
    if (tabs[n - 1]) { tabs[n - 1].click(); tabs[n - 1].focus(); }
  }

  var live;
  function flash(text) {
    if (!live) {
      live = document.createElement('p');
      live.className = 'kb-flash';
      live.setAttribute('role', 'status');
      document.body.appendChild(live);
    }
    live.textContent = text;
    live.hidden = false;
    clearTimeout(live.timer);
    live.timer = setTimeout(function () { live.hidden = true; }, 2500);
  }

  var dialog;
  function help() {
    if (!dialog) {
      dialog = document.createElement('dialog');
      dialog.id = 'keys-dialog';
      dialog.setAttribute('aria-labelledby', 'keys-title');
      var article = document.createElement('article');
      var title = document.createElement('h2');
      title.id = 'keys-title';
      title.textContent = 'Keyboard shortcuts';
      article.appendChild(title);
      var list = document.createElement('dl');
      list.className = 'keys-list';
      KEYS.forEach(function (pair) {
        var dt = document.createElement('dt');
        var kbd = document.createElement('kbd');
        kbd.textContent = pair[0];
        dt.appendChild(kbd);
        var dd = document.createElement('dd');
        dd.textContent = pair[1];
        list.appendChild(dt);
        list.appendChild(dd);
      });
      article.appendChild(list);
      var close = document.createElement('button');
      close.type = 'button';
      close.textContent = 'Close';
      close.addEventListener('click', function () { dialog.close(); });
      article.appendChild(close);
      dialog.appendChild(article);
      document.body.appendChild(dialog);
    }
    if (!dialog.open) dialog.showModal();
  }

  var pendingG = 0;
  document.addEventListener('keydown', function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) return;
    if (dialog && dialog.open) return;  // the dialog's own Esc and Tab
    var key = event.key;
    if (pendingG && Date.now() - pendingG < 1500) {
      pendingG = 0;
      if (key === 'q') { location.href = '/cases/'; event.preventDefault(); return; }
      if (key === 'm') { location.href = '/cases/?assignee=me'; event.preventDefault(); return; }
    }
    pendingG = 0;
    var onQueue = rows().length > 0 || !!document.getElementById('queue-results');
    var row = currentRow();
    var handled = true;
    if (key === '?') help();
    else if (key === 'g') pendingG = Date.now();
    else if (onQueue && key === 'j') move(1);
    else if (onQueue && key === 'k') move(-1);
    else if (row && key === 'Enter' && document.activeElement === row) location.href = row.dataset.href;
    else if (row && key === 'x') {
      var box = row.querySelector('input[type=checkbox]');
      if (box) { box.checked = !box.checked; box.dispatchEvent(new Event('change', {bubbles: true})); }
    }
    else if (key === 'a') assignToMe();
    else if (key === 'd') focusDecision();
    else if (key === 'c') focusComment();
    else if (/^[1-9]$/.test(key) && document.querySelector('[role=tablist]')) openTab(parseInt(key, 10));
    else handled = false;
    if (handled) event.preventDefault();
  });

  // After htmx swaps a row (assign to me), keep the keyboard's place on it (once settled:
  // htmx puts the new row's own attributes back during the settle).
  document.addEventListener('htmx:afterSettle', function (event) {
    var target = event.detail.target;
    if (!target || !/^case-row-/.test(target.id || '')) return;
    var row = document.getElementById(target.id);
    if (row) focusRow(row);
  });
})();
