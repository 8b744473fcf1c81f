// Shared by every figure's script: element builders, colours, controls, and the
// figure's frame (caption, live text for screen readers). Python prepends this file
// to each figure's own script (companion/figures/_base.py), so nothing is fetched.

const SVG_NS = "http://www.w3.org/2000/svg";

// Colour-blind-safe colours (Okabe and Ito), as in companion.figures._base.PALETTE.
const PALETTE = {
  blue: "#0072B2", orange: "#E69F00", vermillion: "#D55E00", green: "#009E73",
  sky: "#56B4E9", purple: "#CC79A7", grey: "#999999", black: "#000000",
};

// The figure's own colours for text, axes, grids and surfaces are CSS variables, set for
// the light theme here and for the dark one below, so a figure follows the book's
// light/dark switch at once (the site's <html data-theme="dark">, JupyterLab's dark
// theme) without being drawn again. Data keep the palette's colours in both themes;
// text in a palette colour uses its text shade (--cf-text-<name>), darker on light
// pages and lighter on dark ones, so that it reads at 4.5:1 or more (WCAG AA).
const FIGURE_CSS = `
.companion-figure {
  --cf-fg: #1f2328; --cf-muted: #474d53; --cf-axis: #5b6167; --cf-zero: #8d9399; --cf-grid: #e3e5e8;
  --cf-surface: var(--pst-color-background, #fff); --cf-surface-2: #eef0f2; --cf-border: #c3c8cd;
  --cf-control: #5b6167; --cf-pressed: #1f4e79; --cf-on-pressed: #fff;
  --cf-text-blue: #0072B2; --cf-text-vermillion: #B04C00; --cf-text-orange: #8F5E00;
  --cf-text-green: #007857; --cf-text-sky: #22739F; --cf-text-purple: #A0457A; --cf-text-grey: #6B6B6B;
  --cf-text-black: var(--cf-fg);
}
html[data-theme="dark"] .companion-figure, [data-jp-theme-light="false"] .companion-figure {
  --cf-fg: #e6e8ea; --cf-muted: #c2c7cc; --cf-axis: #a3a9af; --cf-zero: #7f868d; --cf-grid: #353b42;
  --cf-surface: var(--pst-color-background, #14181e); --cf-surface-2: #262b31; --cf-border: #4f565d;
  --cf-control: #a3a9af; --cf-pressed: #8cc4ec; --cf-on-pressed: #0b1a26;
  --cf-text-blue: #56A9E3; --cf-text-vermillion: #FF8A4C; --cf-text-orange: #E69F00;
  --cf-text-green: #1DBE8E; --cf-text-sky: #56B4E9; --cf-text-purple: #D98BB6; --cf-text-grey: #AAAAAA;
}
.companion-figure { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--cf-fg);
  max-width: 46rem; margin: .5rem 0; }
.companion-figure .cf-controls { display: flex; flex-wrap: wrap; gap: .4rem 1.2rem; align-items: center;
  margin-bottom: .4rem; }
.companion-figure fieldset { border: 0; padding: 0; margin: 0; display: flex; flex-wrap: wrap; gap: .3rem;
  align-items: center; }
.companion-figure legend { float: left; font-size: 1em; font-weight: 600; padding: 0 .4rem 0 0; }
.companion-figure button { font: inherit; padding: .15rem .5rem; border: 1px solid var(--cf-control);
  border-radius: .3rem; background: var(--cf-surface); color: var(--cf-fg); cursor: pointer; }
.companion-figure button[aria-pressed="true"] { background: var(--cf-pressed); color: var(--cf-on-pressed);
  border-color: var(--cf-pressed); }
.companion-figure button:focus-visible, .companion-figure input:focus-visible, .companion-figure select:focus-visible,
.companion-figure svg:focus-visible, .companion-figure [tabindex]:focus-visible {
  outline: 3px solid #E69F00; outline-offset: 2px; }
.companion-figure input[type=range], .companion-figure input[type=checkbox] { accent-color: var(--cf-pressed); }
.companion-figure svg { display: block; width: 100%; height: auto; touch-action: none; }
.companion-figure svg text { font: 11px system-ui, sans-serif; fill: var(--cf-muted); }
.companion-figure .cf-axis-label { font-size: 12px; fill: var(--cf-fg); }
.companion-figure .cf-readout { min-height: 1.4em; font-variant-numeric: tabular-nums; margin: .2rem 0; }
.companion-figure .cf-sr, .companion-figure .cf-caption { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0);
  white-space: nowrap; }
.companion-figure input[type=range] { width: min(16rem, 60vw); }
`;

// The theme's colours, for the drawing: text, axes, grid lines, zero lines and surfaces
// (see FIGURE_CSS), and the text shade of a palette colour.
const INK = {
  fg: "var(--cf-fg)", muted: "var(--cf-muted)", axis: "var(--cf-axis)", zero: "var(--cf-zero)",
  grid: "var(--cf-grid)", surface: "var(--cf-surface)", border: "var(--cf-border)",
};
function textColour(name) {
  return `var(--cf-text-${name})`;
}

function h(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const child of children) node.appendChild(child);
  return node;
}

// An SVG element; a colour given as a CSS variable (INK) goes in its style, where every
// browser resolves it.
function s(tag, attrs = {}, text = null) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (typeof v === "string" && v.startsWith("var(")) node.style.setProperty(k, v);
    else node.setAttribute(k, v);
  }
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

// The ink, black or white, that reads better on the colour "rgb(r,g,b)" (WCAG contrast).
function inkOn(rgb) {
  const [r, g, b] = rgb.match(/\d+/g).slice(0, 3).map((v) => {
    const c = Number(v) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  const luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  return (luminance + 0.05) / 0.05 >= 1.05 / (luminance + 0.05) ? "#000" : "#fff";
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
