// The case page's timeline box is swapped whole by its poll (every 10 s) and by its filter
// links: the run rows a person opened stay open, and the box keeps its scroll position.
(function () {
  var kept = null;
  document.addEventListener('htmx:beforeSwap', function (event) {
    var box = event.detail.target;
    if (!box || box.id !== 'timeline-box') return;
    kept = {
      open: Array.prototype.map.call(box.querySelectorAll('details[open][data-run]'),
        function (d) { return d.dataset.run; }),
      scroll: box.scrollTop
    };
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
