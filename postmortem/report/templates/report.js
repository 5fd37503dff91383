// postmortem report: copy buttons, timeline filters, folded sections opened for printing.
// No network, no eval, no innerHTML: bundle text only ever reaches the page as escaped markup.
(function () {
  "use strict";

  function copyText(text, button) {
    function done(ok) {
      button.textContent = ok ? "copied" : "select + copy";
      button.classList.toggle("done", ok);
      setTimeout(function () { button.textContent = "copy"; button.classList.remove("done"); }, 1500);
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(fallbackCopy(text)); });
    } else {
      done(fallbackCopy(text));
    }
  }

  // file:// pages are not always a secure context, and some browsers refuse the Clipboard API there.
  function fallbackCopy(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "offscreen";
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    document.body.removeChild(area);
    return ok;
  }

  document.querySelectorAll("button.copy").forEach(function (button) {
    button.addEventListener("click", function () {
      var code = button.parentNode.querySelector("code");
      if (code) { copyText(code.textContent, button); }
    });
  });

  // Filters: a mark or row is hidden when its source is unticked, or when none of its lanes is ticked.
  var boxes = document.querySelectorAll("input[data-filter]");
  function checked(kind) {
    var on = {};
    boxes.forEach(function (box) { if (box.dataset.filter === kind && box.checked) { on[box.value] = true; } });
    return on;
  }
  function applyFilters() {
    var sources = checked("src"), lanes = checked("lane");
    var hasLaneFilter = document.querySelector("input[data-filter=lane]") !== null;
    document.querySelectorAll("#timeline [data-src]").forEach(function (el) {
      var laneList = (el.dataset.lanes !== undefined ? el.dataset.lanes : el.dataset.lane || "").split(" ").filter(Boolean);
      var laneOn = !hasLaneFilter || laneList.length === 0 || laneList.some(function (l) { return lanes[l]; });
      el.classList.toggle("off", !(sources[el.dataset.src] && laneOn));
    });
    if (hasLaneFilter) {
      document.querySelectorAll("#timeline g.lane").forEach(function (el) {
        el.classList.toggle("off", !lanes[el.dataset.lane]);
      });
    }
  }
  boxes.forEach(function (box) { box.addEventListener("change", applyFilters); });

  // Printing shows everything: open folded sections, and close them again afterwards.
  var opened = [];
  window.addEventListener("beforeprint", function () {
    document.querySelectorAll("details:not([open])").forEach(function (d) { d.open = true; opened.push(d); });
  });
  window.addEventListener("afterprint", function () {
    opened.forEach(function (d) { d.open = false; });
    opened = [];
  });
})();
