// Accessible tabs: a [role=tablist] of buttons controlling [role=tabpanel] sections.
(function () {
  document.querySelectorAll('[role=tablist]').forEach(function (list) {
    list.addEventListener('click', function (event) {
      var tab = event.target.closest('[role=tab]');
      if (!tab) return;
      list.querySelectorAll('[role=tab]').forEach(function (other) {
        var selected = other === tab;
        other.setAttribute('aria-selected', selected ? 'true' : 'false');
        var panel = document.getElementById(other.getAttribute('aria-controls'));
        if (panel) panel.hidden = !selected;
      });
    });
  });
})();
