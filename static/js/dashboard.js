// The dashboard's charts, drawn with the vendored Chart.js from the JSON the page embeds with
// json_script (#dashboard-data); each canvas names its series (data-chart) and its kind.
(function () {
  "use strict";
  var source = document.getElementById("dashboard-data");
  if (!source || typeof Chart === "undefined") { return; }
  var data = JSON.parse(source.textContent);
  var blue = "#1f5fa8", green = "#1e7b34", red = "#b3261e", amber = "#b35c00", grey = "#6b7280";
  var priorityColours = ["#8a1f1f", "#d9534f", "#e0a030", "#9aa3ad"];
  var small = window.matchMedia("(max-width: 600px)").matches;

  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.plugins.legend.position = "bottom";
  Chart.defaults.font.size = small ? 10 : 12;

  function bar(series, colour) {
    return {type: "bar", data: {labels: series.labels, datasets: [{data: series.values, backgroundColor: colour || blue}]},
            options: {plugins: {legend: {display: false}}, scales: {y: {beginAtZero: true, ticks: {precision: 0}}}}};
  }

  var builders = {
    bar: function (series) { return bar(series); },
    priority: function (series) { return bar(series, priorityColours); },
    per_day: function (series) {
      return {type: "line", data: {labels: series.labels, datasets: [
        {label: "Opened", data: series.opened, borderColor: blue, backgroundColor: blue},
        {label: "Decided", data: series.decided, borderColor: green, backgroundColor: green},
        {label: "Past deadline", data: series.breached, borderColor: red, backgroundColor: red}
      ]}, options: {scales: {y: {beginAtZero: true, ticks: {precision: 0}}, x: {ticks: {maxTicksLimit: small ? 5 : 10}}}}};
    },
    ttd: function (series) {
      return {type: "bar", data: {labels: series.labels, datasets: [
        {label: "Median", data: series.median, backgroundColor: blue},
        {label: "p90", data: series.p90, backgroundColor: amber}
      ]}, options: {scales: {y: {beginAtZero: true, title: {display: !small, text: "hours"}}}}};
    },
    agents: function (series) {
      return {type: "line", data: {labels: series.labels, datasets: [
        {label: "Failed calls (%)", data: series.error_rate, borderColor: red, backgroundColor: red, yAxisID: "y", spanGaps: true},
        {label: "Cost per case ($)", data: series.cost_per_case, borderColor: grey, backgroundColor: grey, yAxisID: "y1", spanGaps: true}
      ]}, options: {scales: {
        y: {beginAtZero: true, position: "left", title: {display: !small, text: "%"}},
        y1: {beginAtZero: true, position: "right", grid: {drawOnChartArea: false}, title: {display: !small, text: "$"}},
        x: {ticks: {maxTicksLimit: small ? 5 : 10}}
      }}};
    }
  };

  document.querySelectorAll("canvas[data-chart]").forEach(function (canvas) {
    var series = data[canvas.dataset.chart];
    var build = builders[canvas.dataset.kind];
    if (!series || !build) { return; }
    new Chart(canvas, build(series));
  });
})();
