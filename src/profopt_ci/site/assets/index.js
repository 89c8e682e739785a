// The index: sort a label's table by a column, filter its rows by name. Without script the tables
// are the same, unsorted and unfiltered.
"use strict";
(function () {
  function key(cell, kind) {
    if (kind === "num") {
      var v = cell.getAttribute("data-v");
      return v === null || v === "" ? null : Number(v);
    }
    return cell.textContent.trim().toLowerCase();
  }
  function sortBy(table, th, col) {
    var kind = th.getAttribute("data-kind");
    var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    table.querySelectorAll("thead th").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[col], kind), y = key(b.cells[col], kind);
      if (x === y) return 0;
      if (x === null) return 1;   // rows without a figure last, either way
      if (y === null) return -1;
      return (x < y ? -1 : 1) * dir;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  document.querySelectorAll("section.label").forEach(function (section) {
    var table = section.querySelector("table.index");
    table.querySelectorAll("thead th").forEach(function (th, col) {
      var kind = th.getAttribute("data-kind");
      if (kind !== "num" && kind !== "text") return;
      th.tabIndex = 0;
      th.addEventListener("click", function () { sortBy(table, th, col); });
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") sortBy(table, th, col); });
    });
    var filter = section.querySelector("input.filter");
    filter.addEventListener("input", function () {
      var want = filter.value.trim().toLowerCase();
      Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
        r.hidden = want !== "" && r.getAttribute("data-name").indexOf(want) < 0;
      });
    });
  });
  performance.mark("profopt-drawn");   // what bench/site_scale.py times
})();
