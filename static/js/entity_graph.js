// The entity / case neighbourhood graph (casework/entities): reads its JSON from the
// container's data-url (no inline script under the CSP) and draws it with Cytoscape.js.
// A click (or Enter on the focused list below) opens the node's case or entity page.
(function () {
  "use strict";
  var box = document.getElementById("entity-graph");
  if (!box || typeof cytoscape === "undefined") return;
  fetch(box.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
    .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
    .then(function (data) {
      var cy = cytoscape({
        container: box,
        elements: data.nodes.concat(data.edges),
        layout: { name: "cose", animate: false, randomize: false, nodeRepulsion: 9000 },
        style: [
          { selector: "node", style: { label: "data(label)", "font-size": 10, "text-wrap": "wrap",
            "text-max-width": 140, "background-color": "#5b7fa6", width: 22, height: 22 } },
          { selector: "node[type = 'case']", style: { shape: "round-rectangle", "background-color": "#4a7d4f" } },
          { selector: "node[?fraud]", style: { "background-color": "#b3261e" } },
          { selector: "node[?centre]", style: { width: 34, height: 34, "border-width": 3, "border-color": "#222" } },
          { selector: "edge", style: { width: 1.5, "line-color": "#aab", "curve-style": "bezier",
            label: "data(label)", "font-size": 8 } }
        ]
      });
      cy.on("tap", "node", function (evt) { window.location.href = evt.target.data("url"); });
      box.dataset.ready = String(data.nodes.length);
      // The same nodes as links, for keyboards and screen readers (and for tests).
      var list = document.createElement("ul");
      list.className = "entity-graph-nodes";
      data.nodes.forEach(function (n) {
        var li = document.createElement("li");
        var a = document.createElement("a");
        a.href = n.data.url;
        a.textContent = n.data.label;
        a.dataset.node = n.data.id;
        li.appendChild(a);
        list.appendChild(li);
      });
      box.insertAdjacentElement("afterend", list);
    })
    .catch(function (err) { box.textContent = "The graph could not be loaded (" + err.message + ")."; });
})();
