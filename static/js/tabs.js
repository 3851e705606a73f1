// Tabs after the WAI-ARIA tabs pattern: a [role=tablist] of [role=tab] buttons controlling
// [role=tabpanel] sections. Only the selected tab is in the Tab order (roving tabindex);
// Left / Right move between tabs and open them, Home / End go to the first / last.
// The chosen tab is kept in the address (?tab=evidence), so a reload or a shared link opens it.
(function () {
  function idOf(tab) { return (tab.getAttribute('aria-controls') || '').replace(/^tab-/, ''); }

  function select(list, tab, focus, record) {
    var tabs = list.querySelectorAll('[role=tab]');
    tabs.forEach(function (other) {
      var selected = other === tab;
      other.setAttribute('aria-selected', selected ? 'true' : 'false');
      other.setAttribute('tabindex', selected ? '0' : '-1');
      var panel = document.getElementById(other.getAttribute('aria-controls'));
      if (panel) {
        panel.hidden = !selected;
        panel.setAttribute('tabindex', '0');
      }
    });
    if (focus) tab.focus();
    if (record && window.history && history.replaceState) {
      var url = new URL(window.location.href);
      if (tab === tabs[0]) url.searchParams.delete('tab'); else url.searchParams.set('tab', idOf(tab));
      history.replaceState(history.state, '', url.pathname + url.search + url.hash);
    }
  }

  function fromAddress() {
    var params = new URLSearchParams(window.location.search);
    var wanted = params.get('tab');
    var hash = window.location.hash.match(/^#tab=([\w-]+)$/);
    return wanted || (hash && hash[1]) || '';
  }

  document.querySelectorAll('[role=tablist]').forEach(function (list) {
    var tabs = Array.prototype.slice.call(list.querySelectorAll('[role=tab]'));
    if (!tabs.length) return;
    var wanted = fromAddress();
    var initial = tabs.filter(function (t) { return idOf(t) === wanted; })[0] ||
      tabs.filter(function (t) { return t.getAttribute('aria-selected') === 'true'; })[0] || tabs[0];
    select(list, initial, false, false);

    list.addEventListener('click', function (event) {
      var tab = event.target.closest('[role=tab]');
      if (tab) select(list, tab, false, true);
    });
    list.addEventListener('keydown', function (event) {
      var index = tabs.indexOf(event.target.closest('[role=tab]'));
      if (index < 0) return;
      var next = {ArrowRight: index + 1, ArrowLeft: index - 1, Home: 0, End: tabs.length - 1}[event.key];
      if (next === undefined) return;
      event.preventDefault();
      select(list, tabs[(next + tabs.length) % tabs.length], true, true);
    });
  });
})();
