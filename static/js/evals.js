// The evaluations page: one line chart per suite (pass rate and average scores over runs),
// drawn with the vendored Chart.js from the JSON each suite embeds with json_script.
(function () {
  "use strict";
  if (typeof Chart === "undefined") { return; }
  var series = [
    ["pass_rate", "Pass rate", "#1e7b34"],
    ["tool_usage", "Tool usage", "#1f5fa8"],
    ["decision_quality", "Decision quality", "#b35c00"],
    ["error_handling", "Error handling", "#7a3fa0"],
    ["groundedness", "Groundedness", "#8a1c1c"]
  ];
  document.querySelectorAll("canvas[id^='chart-']").forEach(function (canvas) {
    var source = document.getElementById(canvas.id.replace("chart-", "chart-data-"));
    if (!source) { return; }
    var data = JSON.parse(source.textContent);
    new Chart(canvas, {
      type: "line",
      data: {
        labels: data.labels,
        datasets: series.map(function (s) {
          return {label: s[1], data: data[s[0]], borderColor: s[2], backgroundColor: s[2], tension: 0, spanGaps: true};
        })
      },
      options: {
        animation: false,
        scales: {y: {min: 0, max: 1}},
        plugins: {legend: {position: "bottom"}}
      }
    });
  });
})();
