/* drfemu's charts: line charts drawn as SVG from specs a page embeds, with no library and no
 * network. A spec: {id, title, x_label, y_label, x_log, y_log, series: [{name, x, y, group, dash,
 * width, markers}], bands: [{start, end, label}]}; a null y (or, on a log axis, one not above 0) breaks a
 * line. A chart goes where the page has an element with data-chart="<its id>", else at the end. Hovering shows the values at the
 * nearest x; clicking a legend entry highlights its group (click again to clear). Once every
 * chart is drawn, <body data-drawn> holds, per chart, its series and each one's points, and
 * <body data-errors> every error the page met: what the browser test reads. */
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var W = 880, H = 320, L = 64, R = 16, T = 28, B = 44;
  var COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                 "#bcbd22", "#17becf"];
  var errors = [];
  window.addEventListener("error", function (e) { errors.push(String(e.message)); note(); });

  function note() { document.body.dataset.errors = JSON.stringify(errors); }

  function el(name, attrs, parent) {
    var node = document.createElementNS(NS, name);
    for (var k in attrs) { node.setAttribute(k, attrs[k]); }
    if (parent) { parent.appendChild(node); }
    return node;
  }

  function extent(values) {
    var lo = Infinity, hi = -Infinity;
    values.forEach(function (v) { if (v !== null && isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); } });
    if (lo === Infinity) { return [0, 1]; }
    if (lo === hi) { return [lo - 0.5 * Math.abs(lo || 1), hi + 0.5 * Math.abs(hi || 1)]; }
    return [lo, hi];
  }

  function ticks(lo, hi, n) {
    var step = Math.pow(10, Math.floor(Math.log10((hi - lo) / n)));
    [1, 2, 5, 10].some(function (m) { if ((hi - lo) / (step * m) <= n) { step *= m; return true; } return false; });
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) { out.push(+v.toPrecision(12)); }
    return out;
  }

  function label(v) {
    var a = Math.abs(v);
    if (a !== 0 && (a >= 1e5 || a < 1e-3)) { return v.toExponential(1); }
    return String(+v.toPrecision(4));
  }

  function scaled(log) {
    return log ? function (v) { return v !== null && v > 0 ? Math.log10(v) : null; }
               : function (v) { return v; };
  }

  function logTicks(lo, hi, given) {
    var distinct = given.filter(function (v, i) { return v !== null && given.indexOf(v) === i; });
    if (distinct.length && distinct.length <= 12) { return distinct.sort(function (a, b) { return a - b; }); }
    var out = [];
    for (var e = Math.floor(lo); e <= Math.ceil(hi); e++) { out.push(e); }
    return out;
  }

  function draw(holder, spec) {
    var box = document.createElement("figure");
    box.className = "chart";
    box.id = spec.id;
    var title = document.createElement("figcaption");
    title.textContent = spec.title;
    box.appendChild(title);
    var svg = el("svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img"}, box);
    var fx = scaled(spec.x_log), fy = scaled(spec.y_log);
    var series = spec.series.map(function (s) {
      return {x: s.x.map(fx), y: s.y.map(fy), raw: s};
    });
    var xs = [], ys = [];
    series.forEach(function (s) { xs = xs.concat(s.x); ys = ys.concat(s.y); });
    (spec.bands || []).forEach(function (b) { xs.push(fx(b.start)); xs.push(fx(b.end)); });
    var xr = extent(xs), yr = extent(ys);
    if (!spec.y_log && spec.y_min !== undefined && spec.y_min !== null) { yr[0] = Math.min(yr[0], spec.y_min); }
    var px = function (x) { return L + (x - xr[0]) / (xr[1] - xr[0]) * (W - L - R); };
    var py = function (y) { return H - B - (y - yr[0]) / (yr[1] - yr[0]) * (H - T - B); };
    (spec.bands || []).forEach(function (b) {
      var band = el("rect", {x: px(b.start), y: T, width: Math.max(1, px(b.end) - px(b.start)), height: H - T - B,
                             "class": "band"}, svg);
      el("title", {}, band).textContent = b.label + ": " + label(b.start) + "–" + label(b.end) + " s";
    });
    el("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, "class": "axis"}, svg);
    el("line", {x1: L, y1: T, x2: L, y2: H - B, "class": "axis"}, svg);
    var shown = function (log, v) { return label(log ? Math.pow(10, v) : v); };
    (spec.x_log ? logTicks(xr[0], xr[1], xs) : ticks(xr[0], xr[1], 8)).forEach(function (v) {
      el("text", {x: px(v), y: H - B + 16, "text-anchor": "middle", "class": "tick"}, svg).textContent =
        shown(spec.x_log, v);
    });
    (spec.y_log ? logTicks(yr[0], yr[1], []) : ticks(yr[0], yr[1], 5)).forEach(function (v) {
      el("line", {x1: L, y1: py(v), x2: W - R, y2: py(v), "class": "grid"}, svg);
      el("text", {x: L - 6, y: py(v) + 4, "text-anchor": "end", "class": "tick"}, svg).textContent =
        shown(spec.y_log, v);
    });
    el("text", {x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle", "class": "name"}, svg).textContent = spec.x_label;
    el("text", {x: 14, y: (T + H - B) / 2, "text-anchor": "middle", "class": "name",
                transform: "rotate(-90 14 " + (T + H - B) / 2 + ")"}, svg).textContent = spec.y_label;
    var legend = document.createElement("div");
    legend.className = "legend";
    var lines = [];
    series.forEach(function (t, i) {
      var s = t.raw;
      var colour = s.colour || COLOURS[i % COLOURS.length];
      var path = "", open = false;
      for (var k = 0; k < t.x.length; k++) {
        if (t.y[k] === null || t.x[k] === null || !isFinite(t.y[k])) { open = false; continue; }
        path += (open ? " L" : " M") + px(t.x[k]).toFixed(1) + " " + py(t.y[k]).toFixed(1);
        open = true;
      }
      var line = el("path", {d: path || "M0 0", stroke: colour, "stroke-width": s.width || 1.5, fill: "none",
                             "class": "series", "data-name": s.name, "data-group": s.group || s.name,
                             "data-points": s.x.length}, svg);
      if (s.dash) { line.setAttribute("stroke-dasharray", "5 4"); }
      if (s.markers) {
        for (var m = 0; m < t.x.length; m++) {
          if (t.y[m] !== null && t.x[m] !== null && isFinite(t.y[m])) {
            el("circle", {cx: px(t.x[m]), cy: py(t.y[m]), r: 3, fill: colour, "class": "marker"}, svg);
          }
        }
      }
      lines.push(line);
      if (s.legend === false) { return; }
      var entry = document.createElement("span");
      entry.className = "entry";
      entry.style.color = colour;
      entry.textContent = "● " + s.name;
      entry.addEventListener("click", function () { highlight(s.group || s.name); });
      legend.appendChild(entry);
    });
    var chosen = null;
    function highlight(group) {
      chosen = chosen === group ? null : group;
      lines.forEach(function (line) {
        line.classList.toggle("dim", chosen !== null && line.dataset.group !== chosen);
        line.classList.toggle("bold", chosen !== null && line.dataset.group === chosen);
      });
    }
    var cursor = el("line", {y1: T, y2: H - B, "class": "cursor", visibility: "hidden"}, svg);
    var tip = document.createElement("div");
    tip.className = "tip";
    svg.addEventListener("mousemove", function (event) {
      var rect = svg.getBoundingClientRect();
      var x = xr[0] + ((event.clientX - rect.left) * W / rect.width - L) / (W - L - R) * (xr[1] - xr[0]);
      var rows = [];
      series.forEach(function (t) {
        var s = t.raw, best = -1;
        for (var k = 0; k < t.x.length; k++) {
          if (t.x[k] !== null && (best < 0 || Math.abs(t.x[k] - x) < Math.abs(t.x[best] - x))) { best = k; }
        }
        if (best >= 0 && s.y[best] !== null && (chosen === null || (s.group || s.name) === chosen)) {
          rows.push(s.name + ": " + label(s.y[best]));
        }
      });
      cursor.setAttribute("x1", px(x));
      cursor.setAttribute("x2", px(x));
      cursor.setAttribute("visibility", "visible");
      tip.textContent = spec.x_label + " " + shown(spec.x_log, x) + " — " + rows.slice(0, 12).join(", ") +
        (rows.length > 12 ? ", …" : "");
    });
    svg.addEventListener("mouseleave", function () { cursor.setAttribute("visibility", "hidden"); });
    box.appendChild(tip);
    box.appendChild(legend);
    (document.querySelector('[data-chart="' + spec.id + '"]') || holder).appendChild(box);
    return {series: spec.series.length, points: lines.map(function (l) { return +l.dataset.points; })};
  }

  window.drfemuCharts = {
    render: function (holder, specs) {
      var drawn = {};
      specs.forEach(function (spec) {
        try { drawn[spec.id] = draw(holder, spec); } catch (e) { errors.push(spec.id + ": " + e); }
      });
      document.body.dataset.drawn = JSON.stringify(drawn);
      note();
    }
  };
})();
