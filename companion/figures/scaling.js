// Chapter 6's figure: which RoPE pairs leave the trained range at length sL. Python
// (companion.figures.scaling) computes every ratio, frequency and count for
// every method and scale; this script draws the chosen method at the chosen scale.

const CX_CSS = `
.companion-figure[data-figure="context_extension"] svg text { font-size: var(--cf-cx-font, 12px); }
.companion-figure[data-figure="context_extension"] svg .cf-axis-label { font-size: calc(var(--cf-cx-font, 12px) + 1px); }
.companion-figure .cf-count { font-weight: 600; margin: .2rem 0; font-variant-numeric: tabular-nums; }
.companion-figure .cf-legend { display: flex; flex-wrap: wrap; gap: .2rem 1rem; font-size: .9em; margin: .1rem 0 .2rem; }
.companion-figure .cf-legend span { display: inline-flex; align-items: center; gap: .3rem; }
.companion-figure .cf-swatch { display: inline-block; width: .9em; height: .9em; border-radius: 2px; }
.companion-figure .cf-scale { display: flex; align-items: center; gap: .4rem; flex-wrap: wrap; }
.companion-figure .cf-scale label { font-weight: 600; }
.companion-figure .cf-scale output { font-variant-numeric: tabular-nums; min-width: 9.5em; }
`;

function render({ model, el }) {
  const { root, controls, body, readout, live } = frame(el, "context_extension", model);
  root.appendChild(h("style", { text: CX_CSS }));
  const methods = model.get("methods");
  const labels = Object.fromEntries(methods);
  const sValues = model.get("s_values");
  const theta = model.get("theta"), turns = model.get("turns");
  const L = model.get("L"), nSlow = model.get("n_slow");
  const nPairs = theta.length, firstSlow = nPairs - nSlow;
  const sMax = sValues[sValues.length - 1];

  // controls: method buttons and the scale slider
  const setMethod = toggleGroup(controls, "Method", methods,
    (m) => { model.set("method", m); model.save_changes(); });
  const sliderId = `cf-cx-s-${model.cid}`;
  const slider = h("input", { type: "range", id: sliderId, min: String(sValues[0]), max: String(sMax), step: "1",
    value: String(model.get("s")), class: "cf-s" });
  const output = h("output", { for: sliderId, class: "cf-s-value" });
  controls.appendChild(h("div", { class: "cf-scale" }, [h("label", { for: sliderId, text: "Scale s" }), slider, output]));
  slider.addEventListener("input", () => {
    const v = Number(slider.value);
    if (sValues.includes(v) && v !== model.get("s")) { model.set("s", v); model.save_changes(); }
  });

  // count line and legend
  const count = h("p", { class: "cf-count" });
  const swatch = (style) => h("span", { class: "cf-swatch", style });
  const legend = h("div", { class: "cf-legend", "aria-hidden": "true" }, [
    h("span", {}, [swatch(`background:${PALETTE.blue}`), document.createTextNode("within the trained range")]),
    h("span", {}, [swatch(`background:${PALETTE.vermillion}`), document.createTextNode("beyond the trained range")]),
    h("span", {}, [swatch("background:rgba(153,153,153,.3)"), document.createTextNode("< 1 turn in training")]),
    h("span", {}, [swatch("border-top:2px dashed var(--cf-fg);height:0;border-radius:0"),
      document.createTextNode("ratio 1: as in training")]),
  ]);
  body.append(count, legend);

  // the plot
  const W = 500, H = 330, left = 30, right = 8, top = 26, bottom = 42;
  const pw = W - left - right, ph = H - top - bottom;
  const step = pw / nPairs, barW = step * 0.76;
  const yLo = -0.5, yHi = Math.log2(sMax) + 0.2;
  const y = (v) => top + ph * (yHi - Math.log2(v)) / (yHi - yLo);
  const yBottom = top + ph;
  const x = (i) => left + i * step;

  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", tabindex: "0", class: "cf-plot",
    "aria-label": "Bar chart: per pair, largest angle at length sL divided by the largest angle in training " +
      "(log scale). Use the left and right arrow keys to read a pair." });
  svg.style.maxWidth = "640px";
  body.appendChild(svg);
  // keep the text readable on narrow screens: font size in viewBox units follows the drawn width
  const fitText = () => {
    const shown = svg.getBoundingClientRect().width;
    if (shown > 0) svg.style.setProperty("--cf-cx-font", `${Math.min(14, Math.max(11, 11 * W / shown)).toFixed(2)}px`);
  };
  fitText();
  if (typeof ResizeObserver !== "undefined") new ResizeObserver(fitText).observe(svg);
  if (nSlow > 0) {
    svg.appendChild(s("rect", { x: x(firstSlow), y: top, width: x(nPairs) - x(firstSlow), height: ph,
      fill: PALETTE.grey, "fill-opacity": 0.22, class: "cf-slow-band", "data-first": firstSlow, "data-count": nSlow }));
    svg.appendChild(s("line", { x1: x(firstSlow), x2: x(firstSlow), y1: top, y2: yBottom, stroke: INK.zero,
      "stroke-dasharray": "3 3" }));
  }
  const ticks = [];
  for (let v = 1; v <= sMax; v *= 2) ticks.push(v);
  for (const v of ticks) {
    svg.appendChild(s("line", { x1: left, x2: left + pw, y1: y(v), y2: y(v), stroke: INK.grid }));
    svg.appendChild(s("text", { x: left - 5, y: y(v) + 4, "text-anchor": "end" }, String(v)));
  }
  const bars = [], hits = [];
  for (let i = 0; i < nPairs; i++) {
    const bar = s("rect", { x: x(i) + (step - barW) / 2, width: barW, class: "cf-bar", "data-pair": i });
    svg.appendChild(bar);
    bars.push(bar);
  }
  svg.appendChild(s("line", { x1: left, x2: left + pw, y1: y(1), y2: y(1), stroke: INK.fg,
    "stroke-width": 1.5, "stroke-dasharray": "6 4", class: "cf-ref", "data-value": 1 }));
  svg.appendChild(s("rect", { x: left, y: top, width: pw, height: ph, fill: "none", stroke: INK.axis }));
  for (let i = 0; i < nPairs; i += 8) {
    svg.appendChild(s("text", { x: x(i) + step / 2, y: yBottom + 16, "text-anchor": "middle" }, String(i)));
  }
  svg.appendChild(s("text", { x: x(nPairs - 1) + step / 2, y: yBottom + 16, "text-anchor": "middle" }, String(nPairs - 1)));
  svg.appendChild(s("text", { x: left + pw / 2, y: H - 8, "text-anchor": "middle", class: "cf-axis-label" },
    "pair index i (fast → slow)"));
  svg.appendChild(s("text", { x: 2, y: top - 9, class: "cf-axis-label" },
    "↑ largest angle at sL ÷ largest angle in training (log scale)"));
  // The selected pair's outline wraps its bar only (never less than a few pixels tall).
  const cursor = s("rect", { y: top, width: step, height: ph, fill: "none", stroke: PALETTE.orange,
    "stroke-width": 2.5, class: "cf-cursor", "pointer-events": "none" });
  svg.appendChild(cursor);
  for (let i = 0; i < nPairs; i++) {
    const hit = s("rect", { x: x(i), y: top, width: step, height: ph, fill: "transparent", class: "cf-hit",
      "data-pair": i });
    hit.addEventListener("pointerenter", () => setPair(i));
    svg.appendChild(hit);
    hits.push(hit);
  }

  function setPair(i) {
    if (i !== model.get("pair")) { model.set("pair", i); model.save_changes(); }
  }

  svg.addEventListener("keydown", (event) => {
    let i = model.get("pair");
    if (event.key === "ArrowLeft") i = Math.max(0, i - 1);
    else if (event.key === "ArrowRight") i = Math.min(nPairs - 1, i + 1);
    else if (event.key === "PageDown") i = Math.min(nPairs - 1, i + 8);
    else if (event.key === "PageUp") i = Math.max(0, i - 8);
    else if (event.key === "Home") i = 0;
    else if (event.key === "End") i = nPairs - 1;
    else return;
    event.preventDefault();
    setPair(i);
  });

  function current() {
    const method = model.get("method"), sv = model.get("s"), k = sValues.indexOf(sv);
    return { method, sv, k };
  }

  function showPair() {
    const { method, k } = current();
    const i = model.get("pair");
    const ratio = model.get("ratio")[method][k][i], out = model.get("out")[method][k][i];
    const freq = model.get("scaled_freq")[method][k][i];
    const barTop = Math.min(Number(bars[i].getAttribute("y")), yBottom - 4);
    cursor.setAttribute("x", x(i) + (step - barW) / 2 - 1.5);
    cursor.setAttribute("width", barW + 3);
    cursor.setAttribute("y", barTop);
    cursor.setAttribute("height", yBottom - barTop);
    readout.dataset.pair = String(i);
    readout.dataset.ratio = String(ratio);
    readout.dataset.out = String(out);
    const where = out ? "beyond the trained range: angles never seen in training"
      : (turns[i] < 1 ? "within the trained range" : "within the trained range: a full turn in training, every angle seen");
    readout.textContent = `pair ${i}: θ = ${fmt(theta[i], 4)} rad/token, ${fmt(turns[i], 4)} turns in training; ` +
      `scaled θ′ = ${fmt(freq, 4)} rad/token; ratio ${fmt(ratio, 4)}× — ${where}`;
  }

  const draw = timed(root, () => {
    const { method, sv, k } = current();
    setMethod(method);
    slider.value = String(sv);
    const tokens = (sv * L).toLocaleString("en-US");
    output.textContent = `${sv} (sL = ${tokens} tokens)`;
    slider.setAttribute("aria-valuetext", `s = ${sv}, ${tokens} tokens`);
    const ratio = model.get("ratio")[method][k], out = model.get("out")[method][k];
    for (let i = 0; i < nPairs; i++) {
      const top_ = y(ratio[i]);
      bars[i].setAttribute("y", top_);
      bars[i].setAttribute("height", Math.max(0, yBottom - top_));
      bars[i].setAttribute("fill", out[i] ? PALETTE.vermillion : PALETTE.blue);
      bars[i].setAttribute("data-ratio", String(ratio[i]));
      bars[i].setAttribute("data-out", String(out[i]));
    }
    const nOut = model.get("n_out")[method][k], worst = model.get("worst")[method][k];
    const kept = model.get("kept")[method][k], factor = model.get("attention_factor")[method][k];
    count.dataset.nOut = String(nOut);
    count.dataset.worst = String(worst);
    count.dataset.method = method;
    count.dataset.s = String(sv);
    count.textContent = `${nOut} of ${nPairs} pairs beyond the trained range` +
      (worst === null ? "" : `; worst ${Number(worst).toFixed(2)}×`);
    showPair();
    live.textContent = `${labels[method]}, s = ${sv} (${tokens} tokens): ${nOut} of ${nPairs} pairs beyond the ` +
      `trained range` + (worst === null ? "" : `; worst ratio among the ${nSlow} slow pairs ${fmt(worst, 4)}×`) +
      `; ${kept} of ${nPairs} pairs keep their training frequency` +
      (factor !== 1 ? `; queries and keys multiplied by ${fmt(factor, 4)}.` : ".");
  });

  model.on("change:method", draw);
  model.on("change:s", draw);
  model.on("change:pair", timed(root, showPair));
  draw();
}

export default { render };
