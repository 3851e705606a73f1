// The case file's parts of the case page (casework/cases/timeline.py, tasks/, attachments/).
(function () {
  // The timeline box is swapped whole by its poll (every 10 s) and by its filter links: the
  // run rows a person opened stay open, and the box keeps its scroll position.
  var kept = null;
  document.addEventListener('htmx:beforeSwap', function (event) {
    var target = event.detail.target;
    if (!target) return;
    if (target.id === 'timeline-box') {
      kept = {
        open: Array.prototype.map.call(target.querySelectorAll('details[open][data-run]'),
          function (d) { return d.dataset.run; }),
        scroll: target.scrollTop
      };
    }
    // The Evidence section answers a refused file with a 4xx and the section naming why:
    // show it where the file was chosen (htmx leaves 4xx answers unswapped by default).
    if (target.id === 'case-evidence' && event.detail.xhr.status >= 400 && event.detail.xhr.status < 500) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
  document.addEventListener('htmx:afterSettle', function () {
    var box = document.getElementById('timeline-box');
    if (!box || !kept) return;
    kept.open.forEach(function (run) {
      var row = box.querySelector('details[data-run="' + run + '"]');
      if (row) row.open = true;
    });
    box.scrollTop = kept.scroll;
    kept = null;
  });
})();
