// A benchmark page: one uPlot chart per metric from window.profoptData (the page's data script).
// Every string from the data is put in as text (textContent), never as markup.
"use strict";
(function () {
  var data = window.profoptData;
  var words = JSON.parse(document.body.getAttribute("data-words") || "{}");
  if (!data || typeof uPlot === "undefined") return;
  var css = getComputedStyle(document.documentElement);
  function color(name) { return css.getPropertyValue(name).trim(); }
  var n = data.commits.length;
  var xs = [];
  for (var i = 0; i < n; i++) xs.push(i);
  var charts = [];
  window.profoptCharts = charts;   // for the page's tests: each chart's uPlot instance

  function fmt(v) {
    if (v === null || v === undefined) return "—";
    var a = Math.abs(v);
    if (a >= 1000) return Math.round(v).toLocaleString("en-US");
    return Number(v.toPrecision(4)).toString();
  }
  function tipLine(label, value) {
    var line = document.createElement("div");
    var b = document.createElement("b");
    b.textContent = label + " ";
    line.appendChild(b);
    line.appendChild(document.createTextNode(value));
    return line;
  }
  function marksFor(metric) {
    return data.marks.filter(function (m) { return m.metric === metric || m.metric === null; });
  }
  function drawMarks(u, metric) {
    var ctx = u.ctx, top = u.bbox.top, bottom = u.bbox.top + u.bbox.height;
    var ratio = window.devicePixelRatio || 1;
    ctx.save();
    marksFor(metric).forEach(function (m) {
      if (m.kind !== "change" && m.kind !== "env" && m.kind !== "runner") return;
      var at = m.kind === "change" ? m.i - 0.5 : m.i;
      var x = Math.round(u.valToPos(at, "x", true));
      if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
      if (m.kind === "change") {
        ctx.strokeStyle = color("--change");
        ctx.lineWidth = 2 * ratio;
        ctx.setLineDash([6 * ratio, 4 * ratio]);
        ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, bottom); ctx.stroke();
      } else if (m.kind === "env") {   // an environment change: a triangle on the axis
        ctx.fillStyle = color("--env");
        ctx.setLineDash([]);
        ctx.beginPath(); ctx.moveTo(x, bottom); ctx.lineTo(x - 6 * ratio, bottom - 10 * ratio);
        ctx.lineTo(x + 6 * ratio, bottom - 10 * ratio); ctx.closePath(); ctx.fill();
      } else {   // the runner probe far off its history: a square on the axis
        ctx.fillStyle = color("--runner");
        ctx.fillRect(x - 4 * ratio, bottom - 8 * ratio, 8 * ratio, 8 * ratio);
      }
    });
    ctx.restore();
  }
  function showTip(fig, tip, u, metric, idx) {
    if (idx === null || idx === undefined || metric.median[idx] === null && !data.failed[idx]) { tip.hidden = true; return; }
    while (tip.firstChild) tip.removeChild(tip.firstChild);
    tip.appendChild(tipLine(words.commit, data.commits[idx]));
    tip.appendChild(tipLine(words.date, data.dates[idx]));
    tip.appendChild(tipLine(words.value, fmt(metric.median[idx])));
    if (metric.low[idx] !== null && metric.high[idx] !== null) {
      tip.appendChild(tipLine(metric.band, fmt(metric.low[idx]) + "–" + fmt(metric.high[idx])));
    }
    marksFor(metric.key).forEach(function (m) { if (m.i === idx) tip.appendChild(tipLine("•", m.text)); });
    tip.hidden = false;
    var left = u.valToPos(idx, "x") + u.over.offsetLeft;
    var top = u.valToPos(metric.median[idx] || 0, "y") + u.over.offsetTop;
    var maxLeft = fig.clientWidth - tip.offsetWidth - 4;
    tip.style.left = Math.max(0, Math.min(left + 12, maxLeft)) + "px";
    tip.style.top = Math.max(0, top - tip.offsetHeight - 8) + "px";
  }
  function chart(fig, metric) {
    var plot = fig.querySelector(".plot"), tip = fig.querySelector(".tip");
    var width = Math.max(320, plot.clientWidth || fig.clientWidth || 800);
    var pointSize = n > 300 ? 3 : 6;
    var opts = {
      width: width, height: 280,
      legend: {show: false},
      cursor: {drag: {x: true, y: false, setScale: true}, points: {size: 9}},
      scales: {x: {time: false, range: function (u, lo, hi) { return [lo - 0.5, hi + 0.5]; }}},
      axes: [
        {stroke: color("--muted"), grid: {stroke: color("--line"), width: 1}, ticks: {stroke: color("--line")},
         incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000], space: 70,
         values: function (u, splits) {
           return splits.map(function (v) { return Number.isInteger(v) && v >= 0 && v < n ? data.commits[v].slice(0, 7) : ""; });
         }},
        {stroke: color("--muted"), grid: {stroke: color("--line"), width: 1}, ticks: {stroke: color("--line")}, size: 60}
      ],
      series: [
        {},
        {label: "low", stroke: "transparent", points: {show: false}},
        {label: metric.label, stroke: color("--accent"), width: 1.5, spanGaps: false,
         points: {show: true, size: pointSize, fill: color("--accent"), stroke: color("--accent")}},
        {label: "high", stroke: "transparent", points: {show: false}}
      ],
      bands: [{series: [3, 1], fill: color("--band")}],
      hooks: {
        draw: [function (u) { drawMarks(u, metric.key); }],
        setCursor: [function (u) { showTip(fig, tip, u, metric, u.cursor.idx); }]
      }
    };
    var u = new uPlot(opts, [xs, metric.low, metric.median, metric.high], plot);
    var down = null, pending = null;
    u.over.addEventListener("mousedown", function (e) { down = [e.clientX, e.clientY]; });
    u.over.addEventListener("mouseleave", function () { tip.hidden = true; });
    u.over.addEventListener("click", function (e) {
      var moved = down && (Math.abs(e.clientX - down[0]) > 3 || Math.abs(e.clientY - down[1]) > 3);
      var idx = u.cursor.idx;
      if (moved || e.detail > 1 || idx === null || idx === undefined || !data.commitUrl) return;
      var url = data.commitUrl + data.commits[idx];
      clearTimeout(pending);   // a double-click resets the zoom and opens nothing
      pending = setTimeout(function () { window.open(url, "_blank", "noopener"); }, 300);
    });
    u.over.addEventListener("dblclick", function () { clearTimeout(pending); });
    charts.push(u);
    return u;
  }
  var byKey = {};
  data.metrics.forEach(function (m) { byKey[m.key] = m; });
  document.querySelectorAll("figure.chart").forEach(function (fig) {
    var metric = byKey[fig.getAttribute("data-metric")];
    if (metric) chart(fig, metric);
  });
  if (data.commitUrl) {   // the table's commits become links (the page itself carries none: 10³ rows)
    document.querySelectorAll("table.nightlies tbody tr").forEach(function (row) {
      var cell = row.cells[0], sha = cell.textContent;
      if (!/^[0-9a-f]{7,40}$/.test(sha)) return;
      var a = document.createElement("a");
      a.href = data.commitUrl + sha;
      a.textContent = sha;
      cell.textContent = "";
      cell.appendChild(a);
    });
  }
  performance.mark("profopt-drawn");   // every chart drawn: what bench/site_scale.py times
  window.addEventListener("resize", function () {
    charts.forEach(function (u) {
      var w = u.root.parentNode.clientWidth;
      if (w > 0) u.setSize({width: Math.max(320, w), height: 280});
    });
  });
})();
