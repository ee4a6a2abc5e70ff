// hpdl's report page, part 2 of 3: one run.
function header(run, title) {
  const h = run.header;
  root.append(el("h1", {}, title || "hpdl report: " + h.run));
  root.append(el("div", { class: "status " + run.status.state }, "status: " + run.status.text));
  const m = h.machine || {};
  const machine = m.cpu ? `${m.cpu} (${m.isa}, ${m.cores} cores${m.gpu ? "; GPU " + m.gpu : ""})` : "not recorded";
  const rows = [
    ["model", `${h.model}, ${num(h.parameters, 0)} parameters`],
    ["data", `${h.data || "-"} (${num(h.train_samples, 0)} samples), batch ${h.batch || "-"}, optimizer ${h.optimizer || "-"}`],
    ["layout", `${h.ranks} rank(s) x ${h.threads_per_rank} thread(s), ${h.mode || "-"}, hosts ${JSON.stringify(h.hosts || {})}`],
    ["backend", `${h.backend}, GEMM ${h.gemm}, precision ${h.precision}`],
    ["machine", machine],
    ["hpdl", `${h.hpdl_version} (${h.git_hash}), oneDNN ${h.onednn_version}, ${h.mpi_library || ""}`],
    ["date", `${h.started || "-"} .. ${h.finished || "-"}`],
    ["command", h.command || "-"],
  ];
  root.append(el("dl", { class: "header" }, rows.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])));
  if (h.plan && h.plan.length) {
    const d = el("details", {}, el("summary", {}, `the plan: what each of the ${h.plan.length} operations runs, and why`));
    d.append(table(["layer", "kind", "kernel", "because"],
      h.plan.map((o) => [o.layer, o.kind, o.kernel, o.reason || ""])));
    root.append(d);
  }
  for (const line of run.missing || []) root.append(el("div", { class: "missing" }, "not in this run: " + line));
}

function stepSection(run) {
  const st = run.steps;
  if (!st) return;
  const s = section("Step time and where it goes", "step");
  tiles(s, [
    [ms(st.median_ms), `median step (p10 ${num(st.p10_ms)}, p90 ${num(st.p90_ms)}), ${st.count} rank-steps`],
    [num(st.samples_per_s, 0), "samples/s (global batch / median step)"],
  ]);
  const parts = Object.keys(PART_NAMES).filter((p) => st.parts[p] !== undefined);
  chart(s, "step parts", {
    type: "bar",
    data: {
      labels: ["mean step"],
      datasets: parts.map((p) => ({ label: PART_NAMES[p], data: [st.parts[p]], backgroundColor: COLORS[p] })),
    },
    options: {
      indexAxis: "y", scales: { x: { stacked: true, title: { display: true, text: "ms" } }, y: { stacked: true } },
      plugins: { title: { display: true, text: "one step's parts, mean over ranks and steps (ms)" } },
    },
  }).canvas.parentNode.style.height = "150px";
}

function layerSection(run) {
  const L = run.layers;
  if (!L) return;
  const s = section("Per layer", "layers");
  const rows = L.rows;
  chart(s, "layers", {
    type: "bar",
    data: {
      labels: rows.map((r) => r.layer),
      datasets: ["forward", "backward"].map((p) => ({
        label: p, data: rows.map((r) => r[p].mean_ms), backgroundColor: COLORS[p],
      })),
    },
    options: {
      scales: { x: { stacked: true }, y: { stacked: true, title: { display: true, text: "ms per step" } } },
      plugins: { title: { display: true, text: "one step by layer: forward and backward (mean ms, rank-steps)" } },
    },
  });
  const total = rows.reduce((a, r) => a + r.forward.mean_ms + r.backward.mean_ms, 0);
  const cell = (p, k, f) => (p[k] === undefined ? "-" : f(p[k]));
  s.append(table(
    ["layer", "fwd ms", "bwd ms", "share", "GFLOP f+b", "fwd GFLOP/s", "bwd GFLOP/s", "fwd %peak", "bwd %peak",
      "bound f/b", "lost ms f+b"],
    rows.map((r) => [r.layer, num(r.forward.mean_ms), num(r.backward.mean_ms),
      pct((r.forward.mean_ms + r.backward.mean_ms) / (total || 1)),
      r.forward.gflop === undefined ? "-" : num(r.forward.gflop + r.backward.gflop, 4),
      cell(r.forward, "gflops_per_s", num), cell(r.backward, "gflops_per_s", num),
      cell(r.forward, "peak_share", pct), cell(r.backward, "peak_share", pct),
      `${r.forward.bound || "-"} / ${r.backward.bound || "-"}`,
      r.forward.lost_ms === undefined ? "-" : num(r.forward.lost_ms + r.backward.lost_ms)])));
  if (L.roofline) rooflineChart(s, L);
}

function rooflineChart(s, L) {
  const peak = L.roofline.peak_gflops, bw = L.roofline.memory_gbs;
  s.append(el("h3", {}, "Roofline"));
  s.append(el("p", { class: "note" },
    `GEMM peak ${num(peak)} GFLOP/s and memory ${num(bw)} GB/s, measured on this run's ranks after training; ` +
    "each layer's forward and backward pass is a point (passes without FLOPs are left out)."));
  const pts = { forward: [], backward: [] };
  for (const r of L.rows) {
    for (const p of ["forward", "backward"]) {
      const q = r[p];
      if (q.intensity > 0 && q.gflops_per_s > 0) pts[p].push({ x: q.intensity, y: q.gflops_per_s, layer: r.layer });
    }
  }
  const xs = pts.forward.concat(pts.backward).map((p) => p.x).concat([peak / bw]);
  const lo = Math.min(...xs) / 4, hi = Math.max(...xs) * 4;
  const line = [];
  for (let k = 0; k <= 60; k++) {
    const x = lo * Math.pow(hi / lo, k / 60);
    line.push({ x: x, y: Math.min(peak, x * bw) });
  }
  chart(s, "roofline", {
    type: "scatter",
    data: {
      datasets: [
        { label: "roofline", data: line, showLine: true, pointRadius: 0, borderColor: "#222", borderWidth: 1.5 },
        { label: "forward", data: pts.forward, backgroundColor: COLORS.forward, pointRadius: 5 },
        { label: "backward", data: pts.backward, backgroundColor: COLORS.backward, pointRadius: 5, pointStyle: "rect" },
      ],
    },
    options: {
      scales: {
        x: { type: "logarithmic", title: { display: true, text: "arithmetic intensity (FLOP/byte)" } },
        y: { type: "logarithmic", title: { display: true, text: "achieved GFLOP/s" } },
      },
      plugins: {
        tooltip: { callbacks: { label: (c) => `${c.raw.layer || "roofline"}: ${num(c.raw.x)} FLOP/B, ${num(c.raw.y)} GFLOP/s` } },
      },
    },
  }, true);
}

function rankSection(run) {
  const st = run.steps;
  if (!st || !st.ranks) return;
  const s = section("Per rank", "ranks");
  const slow = st.slowest;
  if (slow) {
    s.append(el("p", {}, `The slowest rank is ${slow.rank}: ${num(slow.extra_ms)} ms a step more than the other ranks' ` +
      `median in ${slow.why}.`));
  }
  const parts = Object.keys(PART_NAMES);
  chart(s, "ranks", {
    type: "bar",
    data: {
      labels: st.ranks.map((r) => "rank " + r.rank + (slow && r.rank === slow.rank ? " (slowest)" : "")),
      datasets: parts.map((p) => ({ label: PART_NAMES[p], data: st.ranks.map((r) => r[p] || 0), backgroundColor: COLORS[p] })),
    },
    options: {
      scales: { x: { stacked: true }, y: { stacked: true, title: { display: true, text: "mean ms per step" } } },
      plugins: { title: { display: true, text: "each rank's step, by part" } },
    },
  });
  const ar = run.timeline && run.timeline.allreduce;
  if (ar) {
    s.append(el("h3", {}, "Allreduce buckets"));
    s.append(el("p", {}, `${ar.buckets.length} bucket(s) a step (${ar.name}), ${num(ar.per_step_ms)} ms of allreduce a step ` +
      `(summed over ranks / rank-steps); ${pct(ar.hidden_share)} of it overlapped the backward pass.`));
    chart(s, "allreduce buckets", {
      type: "bar",
      data: {
        labels: ar.buckets.map((b) => "bucket " + b.bucket),
        datasets: [
          { label: "during backward", data: ar.buckets.map((b) => b.hidden_ms), backgroundColor: COLORS.backward },
          { label: "after backward", data: ar.buckets.map((b) => b.mean_ms - b.hidden_ms), backgroundColor: COLORS.comm },
        ],
      },
      options: { scales: { x: { stacked: true }, y: { stacked: true, title: { display: true, text: "mean ms" } } } },
    }).canvas.parentNode.style.height = "220px";
  }
}

function serverSection(run) {
  const ps = run.parameter_server;
  if (!ps) return;
  const s = section("Parameter server: the workers", "parameter-server");
  const w = ps.workers;
  chart(s, "workers", {
    type: "bar",
    data: {
      labels: w.map((r) => "worker " + r.rank),
      datasets: [
        { label: "push s", data: w.map((r) => r.push_s), backgroundColor: COLORS.comm },
        { label: "pull s", data: w.map((r) => r.pull_s), backgroundColor: COLORS.data },
        { label: "server wait s", data: w.map((r) => r.wait_s), backgroundColor: COLORS.unattributed },
        { label: "work s", data: w.map((r) => r.work_s), backgroundColor: COLORS.forward },
      ],
    },
    options: { scales: { y: { title: { display: true, text: "seconds over the run" } } } },
  });
  s.append(table(["worker", "steps", "pushes", "pulls", "staleness mean", "staleness p95"],
    w.map((r) => [r.rank, num(r.steps, 0), num(r.pushes, 0), num(r.pulls, 0), num(r.staleness_mean), num(r.staleness_p95, 0)])));
  if (ps.staleness.length) {
    chart(s, "staleness", {
      type: "bar",
      data: { labels: ps.staleness.map((h) => h[0]), datasets: [{ label: "pushes", data: ps.staleness.map((h) => h[1]), backgroundColor: COLORS.allreduce }] },
      options: { scales: { x: { title: { display: true, text: "staleness (server updates between a worker's pull and its push)" } } } },
    }).canvas.parentNode.style.height = "240px";
  }
}

// A zoomable timeline: wheel zooms around the pointer, dragging pans, a double click or
// "whole window" resets. Chart.js draws; these few lines move its x range.
function timelineSection(run) {
  const T = run.timeline;
  if (!T || !T.ranks) return;
  const s = section("Timeline", "timeline");
  s.append(el("p", { class: "note" }, `steps ${T.steps[0]}..${T.steps[1]} (of the ${T.recorded_steps} recorded), every rank, ` +
    "clocks aligned to rank 0. Scroll to zoom, drag to pan, double-click to reset."));
  const labels = [];
  for (let r = 0; r < T.ranks; r++) labels.push("rank " + r);
  const byKind = T.kinds.map(() => []);
  let end = 0;
  for (const [r, t0, d, k, n] of T.spans) {
    byKind[k].push({ x: [t0, t0 + d], y: "rank " + r, name: T.names[n], d: d });
    end = Math.max(end, t0 + d);
  }
  const controls = el("div", { class: "controls" });
  s.append(controls);
  const c = chart(s, "timeline", {
    type: "bar",
    data: {
      labels: labels,
      datasets: T.kinds.map((k, i) => ({
        label: k, data: byKind[i], backgroundColor: COLORS[k] || SERIES[i % SERIES.length],
        grouped: false, barPercentage: 0.9, categoryPercentage: 0.9, minBarLength: 1,
      })),
    },
    options: {
      indexAxis: "y",
      scales: { x: { type: "linear", min: 0, max: end, title: { display: true, text: "ms" } } },
      plugins: { tooltip: { callbacks: { label: (c) => `${c.raw.name}: ${num(c.raw.d, 3)} ms at ${num(c.raw.x[0], 3)}` } } },
    },
  }, T.ranks > 8);
  const set = (lo, hi) => {
    const w = Math.max(hi - lo, 1e-3);
    lo = Math.max(0, lo); hi = Math.min(end, lo + w);
    c.options.scales.x.min = lo; c.options.scales.x.max = hi;
    c.update("none");
  };
  const zoom = (f, at) => {
    const lo = c.scales.x.min, hi = c.scales.x.max;
    const x = at === undefined ? (lo + hi) / 2 : at;
    set(x - (x - lo) * f, x + (hi - x) * f);
  };
  controls.append(el("button", { type: "button" }, "zoom in"), el("button", { type: "button" }, "zoom out"),
    el("button", { type: "button" }, "whole window"));
  const [bin, bout, ball] = controls.querySelectorAll("button");
  bin.onclick = () => zoom(0.5); bout.onclick = () => zoom(2); ball.onclick = () => set(0, end);
  const canvas = c.canvas;
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    zoom(e.deltaY < 0 ? 0.8 : 1.25, c.scales.x.getValueForPixel(e.offsetX));
  }, { passive: false });
  let drag = null;
  canvas.addEventListener("mousedown", (e) => { drag = { x: e.offsetX, lo: c.scales.x.min, hi: c.scales.x.max }; });
  window.addEventListener("mouseup", () => { drag = null; });
  canvas.addEventListener("mousemove", (e) => {
    if (!drag) return;
    const per = (drag.hi - drag.lo) / (c.scales.x.right - c.scales.x.left);
    const dx = (e.offsetX - drag.x) * per;
    set(drag.lo - dx, drag.hi - dx);
  });
  canvas.addEventListener("dblclick", () => set(0, end));
}

function curveSection(run) {
  const C = run.curves;
  if (!C || !C.epoch) return;
  const s = section("Training curves", "curves");
  const ds = [];
  for (const [k, color] of [["train_loss", SERIES[0]], ["test_loss", SERIES[1]], ["val_loss", SERIES[4]]]) {
    if (C[k]) ds.push({ label: k.replace("_", " "), data: C[k], borderColor: color, backgroundColor: color, yAxisID: "loss" });
  }
  for (const [k, color] of [["test_accuracy", SERIES[2]], ["val_accuracy", SERIES[6]]]) {
    if (C[k]) ds.push({ label: k.replace("_", " "), data: C[k], borderColor: color, backgroundColor: color, yAxisID: "acc", borderDash: [5, 3] });
  }
  chart(s, "loss and accuracy", {
    type: "line",
    data: { labels: C.epoch, datasets: ds },
    options: {
      scales: {
        x: { title: { display: true, text: "epoch" } },
        loss: { type: "linear", position: "left", title: { display: true, text: "loss" } },
        acc: { type: "linear", position: "right", min: 0, max: 1, grid: { drawOnChartArea: false }, title: { display: true, text: "accuracy" } },
      },
    },
  });
  if (C.lr) {
    chart(s, "learning rate", {
      type: "line",
      data: { labels: C.epoch, datasets: [{ label: "learning rate at the epoch's end", data: C.lr, borderColor: SERIES[5], backgroundColor: SERIES[5] }] },
      options: { scales: { x: { title: { display: true, text: "epoch" } } } },
    }).canvas.parentNode.style.height = "200px";
  }
}

function runPage(run) {
  header(run);
  stepSection(run);
  layerSection(run);
  rankSection(run);
  serverSection(run);
  timelineSection(run);
  curveSection(run);
}
