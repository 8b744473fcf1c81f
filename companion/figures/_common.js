// Shared by every figure's script: element builders, colours, controls, and the
// figure's frame (caption, live text for screen readers). Python prepends this file
// to each figure's own script (companion/figures/_base.py), so nothing is fetched.

const SVG_NS = "http://www.w3.org/2000/svg";

// Colour-blind-safe colours (Okabe and Ito), as in companion.figures._base.PALETTE.
const PALETTE = {
  blue: "#0072B2", orange: "#E69F00", vermillion: "#D55E00", green: "#009E73",
  sky: "#56B4E9", purple: "#CC79A7", grey: "#999999", black: "#000000",
};

const FIGURE_CSS = `
.companion-figure { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: #111;
  max-width: 46rem; margin: .5rem 0; }
.companion-figure .cf-controls { display: flex; flex-wrap: wrap; gap: .4rem 1.2rem; align-items: center;
  margin-bottom: .4rem; }
.companion-figure fieldset { border: 0; padding: 0; margin: 0; display: flex; flex-wrap: wrap; gap: .3rem;
  align-items: center; }
.companion-figure legend { float: left; font-size: 1em; font-weight: 600; padding: 0 .4rem 0 0; }
.companion-figure button { font: inherit; padding: .15rem .5rem; border: 1px solid #555; border-radius: .3rem;
  background: #fff; color: #111; cursor: pointer; }
.companion-figure button[aria-pressed="true"] { background: #1f4e79; color: #fff; border-color: #1f4e79; }
.companion-figure button:focus-visible, .companion-figure input:focus-visible, .companion-figure select:focus-visible,
.companion-figure svg:focus-visible, .companion-figure [tabindex]:focus-visible {
  outline: 3px solid #E69F00; outline-offset: 2px; }
.companion-figure svg { display: block; width: 100%; height: auto; touch-action: none; }
.companion-figure svg text { font: 11px system-ui, sans-serif; fill: #222; }
.companion-figure .cf-axis-label { font-size: 12px; fill: #111; }
.companion-figure .cf-readout { min-height: 1.4em; font-variant-numeric: tabular-nums; margin: .2rem 0; }
.companion-figure .cf-sr, .companion-figure .cf-caption { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0);
  white-space: nowrap; }
.companion-figure input[type=range] { width: min(16rem, 60vw); }
`;

function h(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const child of children) node.appendChild(child);
  return node;
}

function s(tag, attrs = {}, text = null) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== null) node.textContent = text;
  return node;
}

// Viridis (perceptually uniform, colour-blind safe), t in [0, 1].
const VIRIDIS = [[68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142],
  [31, 158, 137], [53, 183, 121], [110, 206, 88], [181, 222, 43], [253, 231, 37]];
function viridis(t) {
  const x = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x)), f = x - i;
  const c = VIRIDIS[i].map((a, k) => Math.round(a + (VIRIDIS[i + 1][k] - a) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

function fmt(x, digits = 3) {
  if (x === null || x === undefined) return "–";
  return Number(x).toPrecision(digits).replace(/\.?0+(e|$)/, "$1");
}

// 1/2, 1/4, ... for powers of two; a decimal otherwise.
function fraction(m) {
  const k = -Math.log2(m);
  return Number.isInteger(Math.round(k * 1e9) / 1e9) && k > 0 ? `1/${Math.round(2 ** k)}` : fmt(m, 3);
}

// The frame of a figure: root (with data-figure), controls row, body, readout, live
// text for screen readers, and caption. The caption (what the figure shows, then how to
// work it) is for screen readers: on screen the chapter's numbered caption is the one
// a reader sees, and in print the static fallback carries its own.
function frame(el, name, model) {
  const root = h("figure", { class: "companion-figure", "data-figure": name });
  root.appendChild(h("style", { text: FIGURE_CSS }));
  const controls = h("div", { class: "cf-controls" });
  const body = h("div", { class: "cf-body" });
  const readout = h("p", { class: "cf-readout", "aria-live": "polite" });
  const live = h("p", { class: "cf-sr cf-description", "aria-live": "polite" });
  const words = [model.get("caption"), model.get("instructions")].filter(Boolean).join(" ");
  const caption = h("figcaption", { class: "cf-caption", text: words });
  [controls, body, readout, live, caption].forEach((n) => root.appendChild(n));
  el.appendChild(root);
  return { root, controls, body, readout, live, caption };
}

// A group of toggle buttons (one pressed); returns a function that marks the current one.
function toggleGroup(parent, legend, options, onSelect) {
  const set = h("fieldset", {}, [h("legend", { text: legend })]);
  const buttons = options.map(([value, label]) => {
    const b = h("button", { type: "button", "data-value": String(value), text: label });
    b.addEventListener("click", () => onSelect(value));
    set.appendChild(b);
    return b;
  });
  parent.appendChild(set);
  return (current) => buttons.forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.value === String(current))));
}

// Run a redraw and record how long it took (read by benchmarks/bench_figures.py).
function timed(root, draw) {
  return (...args) => {
    const t0 = performance.now();
    draw(...args);
    root.dataset.drawMs = String(performance.now() - t0);
  };
}
