// postmortem triage index: sort the issue list by a column, filter it by text, category and
// status, and count what is shown.  No network, no eval, no innerHTML.
(function () {
  "use strict";
  var table = document.getElementById("issues");
  if (!table) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var query = document.getElementById("q");
  var boxes = document.querySelectorAll("input[data-filter]");
  var shown = document.getElementById("shown");

  function ticked(kind) {
    var on = {};
    boxes.forEach(function (b) { if (b.dataset.filter === kind && b.checked) { on[b.value] = true; } });
    return on;
  }

  function apply() {
    var text = (query.value || "").toLowerCase();
    var cats = ticked("category"), states = ticked("status");
    var n = 0, bundles = 0;
    rows.forEach(function (r) {
      var ok = (!text || r.dataset.text.indexOf(text) >= 0) && cats[r.dataset.category] && states[r.dataset.status];
      r.hidden = !ok;
      if (ok) { n += 1; bundles += Number(r.dataset.count); }
    });
    shown.textContent = n + " of " + rows.length + " groups shown (" + bundles + " bundles)";
  }

  function sortBy(th) {
    var key = th.dataset.sort, numeric = th.dataset.type === "number";
    var down = th.getAttribute("aria-sort") !== "descending";
    table.querySelectorAll("th[data-sort]").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", down ? "descending" : "ascending");
    rows.sort(function (a, b) {
      var x = a.dataset[key] || "", y = b.dataset[key] || "";
      var c = numeric ? Number(x) - Number(y) : (x < y ? -1 : x > y ? 1 : 0);
      return down ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }

  table.querySelectorAll("th[data-sort] button").forEach(function (button) {
    button.addEventListener("click", function () { sortBy(button.parentNode); });
  });
  query.addEventListener("input", apply);
  boxes.forEach(function (b) { b.addEventListener("change", apply); });
  apply();
})();
