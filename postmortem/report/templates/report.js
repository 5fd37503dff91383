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

  // Zoom and pan the time axis of the job's chart: every placed mark carries its times
  // (data-t, data-te, data-u), so the marks are moved, never stretched.
  function zoomable(band) {
    var left = +band.dataset.left, right = +band.dataset.right;
    var job = [+band.dataset.t0, +band.dataset.t1], all = [+band.dataset.full0, +band.dataset.full1];
    var range = job.slice();
    var svg = band.ownerSVGElement;
    function x(t) { return left + (t - range[0]) * (right - left) / (range[1] - range[0]); }
    function clamp(v) { return Math.min(Math.max(v, left - 40), right + 40); }
    function label(t, span) {
      var iso = new Date(t * 1000).toISOString();
      return span < 10 ? iso.slice(11, 23) : span < 172800 ? iso.slice(11, 19) : iso.slice(5, 16).replace("T", " ");
    }
    function draw() {
      band.querySelectorAll("a.mark[data-t]").forEach(function (a) {
        var t = +a.dataset.t, te = +a.dataset.te, u = +a.dataset.u;
        var x0 = clamp(x(t)), x1 = clamp(x(te));
        a.querySelectorAll("circle").forEach(function (c) { c.setAttribute("cx", x0); });
        a.querySelectorAll("line.root-line").forEach(function (l) { l.setAttribute("x1", x0); l.setAttribute("x2", x0); });
        a.querySelectorAll("line.span").forEach(function (l) { l.setAttribute("x1", x0); l.setAttribute("x2", x1); });
        a.querySelectorAll("text.root-label").forEach(function (l) { l.setAttribute("x", x0 + 10); });
        a.querySelectorAll("rect.bar").forEach(function (r) {
          var b0 = clamp(x(t - u)), b1 = clamp(x(te + u));
          r.setAttribute("x", b0); r.setAttribute("width", Math.max(b1 - b0, 1));
        });
      });
      var span = range[1] - range[0];
      band.querySelectorAll("g.tick-mark").forEach(function (g, i) {
        var t = range[0] + span * i / 4, tx = x(t);
        g.querySelector("line").setAttribute("x1", tx);
        g.querySelector("line").setAttribute("x2", tx);
        var text = g.querySelector("text");
        text.setAttribute("x", tx);
        text.textContent = label(t, span);
      });
    }
    function zoom(factor, at) {
      var span = (range[1] - range[0]) * factor;
      if (span < 1e-3) { return; }
      var centre = at === undefined ? (range[0] + range[1]) / 2 : at;
      var share = (centre - range[0]) / (range[1] - range[0]);
      range = [centre - span * share, centre + span * (1 - share)];
      draw();
    }
    function timeAt(evt) {
      var box = svg.getBoundingClientRect(), scale = svg.viewBox.baseVal.width / box.width;
      var px = (evt.clientX - box.left) * scale;
      return range[0] + (px - left) * (range[1] - range[0]) / (right - left);
    }
    svg.addEventListener("wheel", function (evt) {
      evt.preventDefault();
      zoom(evt.deltaY > 0 ? 1.25 : 0.8, timeAt(evt));
    }, { passive: false });
    var dragFrom = null;
    svg.addEventListener("pointerdown", function (evt) { dragFrom = timeAt(evt); });
    svg.addEventListener("pointermove", function (evt) {
      if (dragFrom === null || !(evt.buttons & 1)) { dragFrom = null; return; }
      var shift = dragFrom - timeAt(evt);
      if (Math.abs(shift) > 0) { range = [range[0] + shift, range[1] + shift]; draw(); }
    });
    window.addEventListener("pointerup", function () { dragFrom = null; });
    document.querySelectorAll("button.zoom-btn").forEach(function (button) {
      button.addEventListener("click", function () {
        var how = button.dataset.zoom;
        if (how === "in") { zoom(0.5); } else if (how === "out") { zoom(2); }
        else { var r = how === "job" ? job : all; var pad = (r[1] - r[0]) * 0.02 || 0.5; range = [r[0] - pad, r[1] + pad]; draw(); }
      });
    });
  }
  var jobBand = document.querySelector("#timeline .svgwrap > svg g.band-placed[data-t0]");
  if (jobBand) { zoomable(jobBand); }

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
