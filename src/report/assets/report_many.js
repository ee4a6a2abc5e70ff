// hpdl's report page, part 3 of 3: two runs, a sweep, and which page to draw.
function comparePage(d) {
  const [a, b] = d.runs;
  root.append(el("h1", {}, `hpdl compare: ${a.header.run} (A) vs ${b.header.run} (B)`));
  for (const [tag, run] of [["A", a], ["B", b]]) {
    root.append(el("div", { class: "status " + run.status.state }, `${tag} ${run.header.dir}: ${run.status.text}`));
    for (const line of run.missing || []) root.append(el("div", { class: "missing" }, `not in ${tag}: ${line}`));
  }
  const s = section("What differs", "differences");
  const diffs = d.config_differences.map(([k, x, y]) => [k, x || "(not set)", y || "(not set)"])
    .concat(d.setting_differences.map(([k, x, y]) => [k, JSON.stringify(x), JSON.stringify(y)]));
  s.append(diffs.length ? table(["setting", "A", "B"], diffs) : el("p", {}, "Nothing: the same configuration on the same machine and build."));
  if (a.steps && b.steps) {
    tiles(s, [[ms(a.steps.median_ms), "A median step"], [ms(b.steps.median_ms), "B median step"],
      [num(b.steps.median_ms / a.steps.median_ms, 3), "B / A"]]);
  }
  const rows = d.layers.filter((r) => !r.only_in);
  if (!rows.length) return;
  const l = section("Per layer, A against B", "layers");
  chart(l, "layers A vs B", {
    type: "bar",
    data: {
      labels: rows.map((r) => r.layer),
      datasets: [
        { label: "A forward", data: rows.map((r) => r.forward.a_ms), backgroundColor: "#9db6d3", stack: "A" },
        { label: "A backward", data: rows.map((r) => r.backward.a_ms), backgroundColor: "#f0a9ab", stack: "A" },
        { label: "B forward", data: rows.map((r) => r.forward.b_ms), backgroundColor: COLORS.forward, stack: "B" },
        { label: "B backward", data: rows.map((r) => r.backward.b_ms), backgroundColor: COLORS.backward, stack: "B" },
      ],
    },
    options: { scales: { x: { stacked: true }, y: { stacked: true, title: { display: true, text: "median ms per step" } } } },
  });
  l.append(el("p", { class: "note" }, "A change counts only outside the noise: each side's own spread (p95 - p50) / p50, combined."));
  const out = [];
  const cls = [];
  for (const r of d.layers) {
    if (r.only_in) { out.push([r.layer, "only in " + r.only_in, "", "", "", "", ""]); cls.push(""); continue; }
    for (const p of ["forward", "backward"]) {
      const c = r[p];
      out.push([r.layer, p, num(c.a_ms, 3), num(c.b_ms, 3), num(c.ratio, 3), pct(c.noise), c.change]);
      cls.push(c.change === "slower" ? "worse" : c.change === "faster" ? "better" : "");
    }
  }
  l.append(table(["layer", "pass", "A p50 ms", "B p50 ms", "B/A", "noise", "change"], out, (k) => cls[k]));
}

// ---- a sweep ----
function studyPage(d) {
  root.append(el("h1", {}, "hpdl study: " + d.dir));
  const h = d.header, m = h.machine || {};
  root.append(el("p", {}, `${d.tasks.length} tasks of ${h.model}; swept: ${d.swept.join(", ") || "nothing"}; machine ` +
    (m.cpu ? `${m.cpu} (${m.isa}, ${m.cores} cores)` : "not recorded") + `; hpdl ${h.hpdl_version} (${h.git_hash}).`));
  const label = (t) => "task " + t.task + (Object.keys(t.setting).length ? ": " + Object.entries(t.setting).map(([k, v]) => `${k}=${v}`).join(" ") : "");
  const s = section("Tasks", "tasks");
  s.append(table(["task", "setting", "status", "median step ms", "samples/s"],
    d.tasks.map((t) => [t.task, Object.entries(t.setting).map(([k, v]) => `${k}=${v}`).join(" "), t.status,
      num(t.step_ms), num(t.samples_per_s, 0)])));
  const profiled = d.tasks.filter((t) => t.layers.length);
  if (!profiled.length) { s.append(el("p", { class: "missing" }, "No task was profiled: no per-layer times.")); return; }
  const layers = [...new Set(profiled.flatMap((t) => t.layers.map((r) => r[0])))];
  const l = section("Per layer across the sweep", "layers");
  chart(l, "layer time across tasks", {
    type: "line",
    data: {
      labels: profiled.map(label),
      datasets: layers.map((name, i) => ({
        label: name, borderColor: SERIES[i % SERIES.length], backgroundColor: SERIES[i % SERIES.length],
        data: profiled.map((t) => { const r = t.layers.find((x) => x[0] === name); return r ? r[1] + r[2] : null; }),
      })),
    },
    options: { scales: { y: { type: "logarithmic", title: { display: true, text: "forward + backward ms per step" } } } },
  }, true);
  l.append(table(["layer"].concat(profiled.map((t) => "task " + t.task + " f / b ms")),
    layers.map((name) => [name].concat(profiled.map((t) => {
      const r = t.layers.find((x) => x[0] === name);
      return r ? `${num(r[1], 3)} / ${num(r[2], 3)}` : "-";
    })))));
  // Thread scaling: tasks that differ only in threads per rank.
  const groups = {};
  for (const t of profiled) {
    const key = Object.entries(t.setting).filter(([k]) => k !== "threads_per_rank").map(([k, v]) => `${k}=${v}`).join(" ");
    (groups[key] = groups[key] || []).push(t);
  }
  for (const [key, ts] of Object.entries(groups)) {
    const threads = [...new Set(ts.map((t) => t.threads))].sort((x, y) => x - y);
    if (threads.length < 2) continue;
    const g = section("Scaling with threads per rank" + (key ? ": " + key : ""), "scaling");
    const at = (n, name) => { const t = ts.find((x) => x.threads === n); const r = t && t.layers.find((x) => x[0] === name); return r ? r[1] + r[2] : null; };
    chart(g, "layer speed-up " + key, {
      type: "line",
      data: {
        labels: threads,
        datasets: layers.map((name, i) => ({
          label: name, borderColor: SERIES[i % SERIES.length], backgroundColor: SERIES[i % SERIES.length],
          data: threads.map((n) => (at(n, name) ? at(threads[0], name) / at(n, name) : null)),
        })).concat([{ label: "linear", data: threads.map((n) => n / threads[0]), borderColor: "#222", borderDash: [4, 4], pointRadius: 0 }]),
      },
      options: { scales: { x: { title: { display: true, text: "OpenMP threads per rank" } }, y: { title: { display: true, text: `speed-up over ${threads[0]} thread(s)` } } } },
    });
    g.append(table(["layer"].concat(threads.map((n) => `${n} thr ms (speed-up)`)),
      layers.map((name) => [name].concat(threads.map((n) => (at(n, name) ? `${num(at(n, name), 3)} (${num(at(threads[0], name) / at(n, name), 2)}x)` : "-"))))));
  }
}

if (data.kind === "compare") comparePage(data);
else if (data.kind === "study") studyPage(data);
else runPage(data);
document.body.dataset.ready = "1";
