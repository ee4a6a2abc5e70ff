// hpdl's report page, part 1 of 3: the data and the building blocks. The page draws the
// JSON in #report-data (src/report/report_data.hpp) with Chart.js; the three parts are one
// script (src/report/page.cpp joins them). Each chart's container gets data-marks, the number
// of marks Chart.js drew, so a browser test can count them; any script error is counted in
// <body data-errors>.
"use strict";
const errors = [];
window.addEventListener("error", (e) => {
  errors.push(String(e.message));
  document.body.dataset.errors = String(errors.length);
});
const data = JSON.parse(document.getElementById("report-data").textContent);
const root = document.getElementById("report");
Chart.defaults.animation = false; // drawn at once, for screenshots and printing
Chart.defaults.font.size = 11;
Chart.defaults.maintainAspectRatio = false;
const COLORS = {
  forward: "#4e79a7", backward: "#e15759", loss: "#edc948", update: "#59a14f",
  data: "#76b7b2", comm: "#f28e2b", allreduce: "#b07aa1", unattributed: "#bab0ac",
};
const SERIES = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
  "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#8c564b"];
const PART_NAMES = {
  forward: "forward", backward: "backward", loss: "loss", update: "update",
  data: "data", comm: "communication not hidden", unattributed: "unattributed",
};

// ---- building blocks ----
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) {
    if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
  }
  return e;
}
function num(v, digits) {
  if (v === null || v === undefined || v === "" || Number.isNaN(v)) return "-";
  if (typeof v !== "number") return String(v);
  const d = digits === undefined ? (Math.abs(v) >= 100 ? 1 : Math.abs(v) >= 1 ? 2 : 3) : digits;
  return v.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
}
function pct(v) { return v === undefined || v === null ? "-" : num(100 * v, 1) + " %"; }
function section(title, id) {
  const s = el("section", { id: id }, el("h2", {}, title));
  root.append(s);
  return s;
}
function table(headers, rows, rowClass) {
  const t = el("table", {}, el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))));
  const body = el("tbody");
  rows.forEach((r, k) => {
    const tr = el("tr", rowClass ? { class: rowClass(k) || "" } : {});
    r.forEach((c) => tr.append(el("td", typeof c === "string" && c.length > 24 ? { class: "text" } : {}, c)));
    body.append(tr);
  });
  t.append(body);
  return t;
}
function tiles(parent, items) {
  parent.append(el("div", { class: "tiles" },
    items.map(([value, label]) => el("div", { class: "tile" }, el("b", {}, value), el("span", {}, label)))));
}
function chart(parent, name, config, tall) {
  const box = el("div", { class: tall ? "chart tall" : "chart", "data-chart": name });
  const canvas = el("canvas", { "aria-label": name, role: "img" });
  box.append(canvas);
  parent.append(box);
  const c = new Chart(canvas, config);
  let marks = 0;
  c.data.datasets.forEach((d, i) => { marks += c.getDatasetMeta(i).data.length; });
  box.dataset.marks = String(marks);
  return c;
}
const ms = (v) => num(v) + " ms";
