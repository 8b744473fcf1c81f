// Chapter 4's figure: ALiBi's causal heatmap. Python (companion.figures.alibi) computes
// the scores and weights of every head; this script draws the chosen head and view.

function render({ model, el }) {
  const { root, controls, body, readout, live } = frame(el, "alibi_heatmap", model);
  const n = model.get("n");
  const slopes = model.get("slopes");
  const cell = 14, left = 44, top = 10, size = n * cell;
  const width = left + size + 70, height = top + size + 40;

  const setHead = toggleGroup(controls, "Head", slopes.map((m, h) => [h, `${h + 1} · m=${fraction(m)}`]),
    (h) => { model.set("head", h); model.save_changes(); });
  const setView = toggleGroup(controls, "View", [["scores", "scores"], ["weights", "weights"]],
    (v) => { model.set("view", v); model.save_changes(); });

  // labels in viewBox units, large enough to stay over 9 px when a phone draws the map 350 px wide
  root.appendChild(h("style", { text: ".companion-figure svg.cf-heatmap text { font-size: 12.5px; }" +
    ".companion-figure svg.cf-heatmap .cf-axis-label { font-size: 13px; }" }));
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", tabindex: "0", class: "cf-heatmap",
    "aria-label": "Heatmap of query position against key position; use the arrow keys to read a cell" });
  svg.style.maxWidth = "480px";
  body.appendChild(svg);
  const cells = [];
  for (let i = 0; i < n; i++) {
    const row = [];
    for (let j = 0; j <= i; j++) {
      const r = s("rect", { x: left + j * cell, y: top + i * cell, width: cell, height: cell, "shape-rendering": "crispEdges",
        "data-i": i, "data-j": j, class: "cf-cell" });
      r.addEventListener("pointerenter", () => select(i, j));
      svg.appendChild(r);
      row.push(r);
    }
    cells.push(row);
  }
  svg.appendChild(s("rect", { x: left, y: top, width: size, height: size, fill: "none", stroke: INK.axis }));
  for (let t = 0; t < n; t += 4) {
    svg.appendChild(s("text", { x: left + t * cell + cell / 2, y: top + size + 13, "text-anchor": "middle" }, t));
    svg.appendChild(s("text", { x: left - 5, y: top + t * cell + cell / 2 + 4, "text-anchor": "end" }, t));
  }
  svg.appendChild(s("text", { x: left + size / 2, y: top + size + 32, "text-anchor": "middle", class: "cf-axis-label" },
    "key position j (tokens)"));
  svg.appendChild(s("text", { x: 12, y: top + size / 2, "text-anchor": "middle", class: "cf-axis-label",
    transform: `rotate(-90 12 ${top + size / 2})` }, "query position i"));
  const cursor = s("rect", { width: cell, height: cell, fill: "none", stroke: PALETTE.orange, "stroke-width": 2.5,
    visibility: "hidden", class: "cf-cursor" });
  svg.appendChild(cursor);
  // colour bar
  const barX = left + size + 16, barH = size;
  const defs = s("defs");
  const grad = s("linearGradient", { id: `cf-alibi-grad-${model.cid}`, x1: 0, y1: 1, x2: 0, y2: 0 });
  for (let k = 0; k <= 10; k++) grad.appendChild(s("stop", { offset: k / 10, "stop-color": viridis(k / 10) }));
  defs.appendChild(grad);
  svg.appendChild(defs);
  svg.appendChild(s("rect", { x: barX, y: top, width: 12, height: barH, fill: `url(#cf-alibi-grad-${model.cid})` }));
  const barMax = s("text", { x: barX + 16, y: top + 9 });
  const barMin = s("text", { x: barX + 16, y: top + barH });
  svg.append(barMax, barMin);

  let cur = [n - 1, n - 1];
  let range = [0, 1];

  function values() {
    return model.get(model.get("view"))[model.get("head")];
  }

  function select(i, j) {
    cur = [i, j];
    cursor.setAttribute("x", left + j * cell);
    cursor.setAttribute("y", top + i * cell);
    cursor.setAttribute("visibility", "visible");
    const head = model.get("head");
    const sc = model.get("scores")[head][i][j], w = model.get("weights")[head][i][j];
    readout.textContent = `query ${i}, key ${j} (distance ${i - j}): score ${fmt(sc, 3)}, weight ${fmt(w, 3)}`;
  }

  svg.addEventListener("keydown", (event) => {
    let [i, j] = cur;
    if (event.key === "ArrowLeft") j = Math.max(0, j - 1);
    else if (event.key === "ArrowRight") j = Math.min(i, j + 1);
    else if (event.key === "ArrowUp") { i = Math.max(0, i - 1); j = Math.min(j, i); }
    else if (event.key === "ArrowDown") i = Math.min(n - 1, i + 1);
    else return;
    event.preventDefault();
    select(i, j);
  });

  const draw = timed(root, () => {
    const head = model.get("head"), view = model.get("view");
    setHead(head);
    setView(view);
    const v = values();
    if (view === "weights") range = [0, 1];
    else {
      const flat = v.flat().filter((x) => x !== null);
      range = [Math.min(...flat), Math.max(...flat)];
    }
    const span = range[1] - range[0] || 1;
    for (let i = 0; i < n; i++) {
      for (let j = 0; j <= i; j++) {
        const r = cells[i][j];
        r.setAttribute("fill", viridis((v[i][j] - range[0]) / span));
        r.setAttribute("data-value", String(v[i][j]));
      }
    }
    barMax.textContent = fmt(range[1], 3);
    barMin.textContent = fmt(range[0], 3);
    select(cur[0], cur[1]);
    const share = model.get("near_share")[head], span90 = model.get("span90")[head];
    live.textContent = `Head ${head + 1} of ${slopes.length}, slope ${fraction(slopes[head])}, ${view} view: ` +
      `on average ${Math.round(100 * share)}% of each query's weight falls on keys at most 2 positions back; ` +
      `90% of the last query's weight lies within distance ${span90}.`;
  });

  model.on("change:head", draw);
  model.on("change:view", draw);
  draw();
}

export default { render };
