// Page behaviours that used to be inline <script> blocks and onclick attributes, moved here so
// that the Content-Security-Policy can forbid inline scripts. Every listener is delegated from
// the document, so it also covers fragments htmx swaps in later.
(function () {
  // One submission only: a second click (or Enter) while the first is on its way does nothing.
  // A form marked data-submit-once="pressed" (a decision between outcomes) marks the pressed
  // button busy and disables the others; data-submit-once="all" marks every button busy.
  document.addEventListener('submit', function (event) {
    var form = event.target;
    var mode = form.dataset && form.dataset.submitOnce;
    if (mode !== 'pressed' && mode !== 'all') return;
    if (form.dataset.sent) { event.preventDefault(); return; }
    form.dataset.sent = '1';
    form.querySelectorAll('button').forEach(function (button) {
      if (mode === 'all' || button === event.submitter) button.setAttribute('aria-busy', 'true');
      else button.disabled = true;
    });
  });
  // Back to a page from the browser's cache: a decision form can be sent again.
  window.addEventListener('pageshow', function (event) {
    if (!event.persisted) return;
    document.querySelectorAll('form[data-submit-once="pressed"]').forEach(function (form) {
      delete form.dataset.sent;
      form.querySelectorAll('button').forEach(function (b) { b.disabled = false; b.removeAttribute('aria-busy'); });
    });
  });

  // A link that opens a tab: <a data-open-tab="tab-button-id" href="#panel">.
  document.addEventListener('click', function (event) {
    var link = event.target.closest && event.target.closest('[data-open-tab]');
    if (!link) return;
    var tab = document.getElementById(link.dataset.openTab);
    if (!tab) return;
    event.preventDefault();
    tab.click();
  });

  // The employee's answer page: the colleague and period fields are hidden for "other".
  function syncCoverFields() {
    var cover = document.getElementById('cover-fields');
    if (!cover) return;
    var chosen = document.querySelector('input[name=claim_type]:checked');
    cover.hidden = !!chosen && chosen.value === 'other';
  }
  document.addEventListener('change', function (event) {
    if (event.target.name === 'claim_type') syncCoverFields();
  });
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', syncCoverFields);
  else syncCoverFields();

  // A sign-in through the identity provider due for renewal (casework.people.oidc): an htmx
  // request got nothing; say so once, with a link that renews and comes back to this page,
  // rather than leaving the page under what the person is typing.
  document.addEventListener('casework:renew-sign-in', function (event) {
    if (document.getElementById('renew-sign-in')) return;
    var box = document.querySelector('main .messages');
    if (!box) {
      box = document.createElement('div');
      box.className = 'messages';
      document.getElementById('main').prepend(box);
    }
    var note = document.createElement('p');
    note.id = 'renew-sign-in';
    note.className = 'flash flash-warning';
    note.setAttribute('role', 'alert');
    note.append('Your sign-in must be renewed before this page can update. ');
    var link = document.createElement('a');
    link.href = event.detail.url;
    link.textContent = 'Renew sign-in';
    note.append(link);
    box.append(note);
  });
})();
