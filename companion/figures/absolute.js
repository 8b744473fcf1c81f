// Chapter 1's figure: the position-position term PE(m)ᵀ M PE(m+k) / (d/2) at a fixed distance k.
// Python (companion.figures.absolute) computes both curves for every distance;
// this script draws the chosen one and moves the point on the M = I + R curve.

function render({ model, el }) {
  const { root, controls, body, readout, live } = frame(el, "position_term", model);
  const distances = model.get("distances");
  const mMax = model.get("m_max");
  const uid = `cf-pt-${model.cid}`;

  const setK = toggleGroup(controls, "Distance k", distances.map((k) => [k, String(k)]),
    (k) => { model.set("k", k); model.save_changes(); });

  const slider = h("input", { type: "range", min: "0", max: String(mMax), step: "1", id: `${uid}-m`,
    class: "cf-m-slider" });
  controls.appendChild(h("label", { for: `${uid}-m`, text: "position m " }, [slider]));
  slider.addEventListener("input", () => setM(Number(slider.value)));

  const svg = s("svg", { role: "img", tabindex: "0",
    "aria-label": "Line chart of the position-position term against position m; " +
      "drag the orange point or use the left and right arrow keys to move it" });
  body.appendChild(svg);

  // Static parts are laid out for the width available (so text keeps its size on a
  // phone) and again when that width changes.
  const [yLo, yHi] = model.get("y_range");
  const sigma = model.get("sigma");
  const guide = s("line", { stroke: INK.zero, "stroke-dasharray": "2 3", class: "cf-guide" });
  const identityLine = s("polyline", { fill: "none", stroke: PALETTE.blue, "stroke-width": 2.5,
    "stroke-dasharray": "6 4", class: "cf-curve cf-identity" });
  const mixedLine = s("polyline", { fill: "none", stroke: PALETTE.orange, "stroke-width": 2,
    "stroke-linejoin": "round", class: "cf-curve cf-mixed" });
  const identityDot = s("circle", { r: 4, fill: PALETTE.blue, class: "cf-identity-point" });
  const handle = s("circle", { r: 7, fill: PALETTE.orange, stroke: INK.fg, "stroke-width": 1.5,
    class: "cf-handle", style: "cursor: grab" });
  const left = 54, right = 12;
  let width = 0, top = 0, plotW = 0, plotH = 0;
  const x = (m) => left + (m / mMax) * plotW;
  const y = (v) => top + (1 - (v - yLo) / (yHi - yLo)) * plotH;

  function layout(available) {
    width = Math.round(Math.min(640, Math.max(320, available || 560)));
    const twoRows = width < 460;
    top = twoRows ? 46 : 30;
    const height = Math.round(top + Math.min(260, Math.max(190, width * 0.42)) + 46);
    plotW = width - left - right;
    plotH = height - top - 46;
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.style.maxWidth = `${width}px`;
    svg.replaceChildren();
    svg.appendChild(s("rect", { x: left, y: top, width: plotW, height: plotH, fill: INK.surface, stroke: INK.axis,
      class: "cf-plot-area", "data-m-min": 0, "data-m-max": mMax }));
    for (let m = 0; m <= mMax; m += 25) {
      svg.appendChild(s("line", { x1: x(m), x2: x(m), y1: top + plotH, y2: top + plotH + 4, stroke: INK.axis }));
      if (m % 50 === 0) svg.appendChild(s("text", { x: x(m), y: top + plotH + 16, "text-anchor": "middle" }, m));
    }
    for (let v = Math.ceil(yLo * 4) / 4; v <= yHi + 1e-9; v += 0.25) {
      const yy = y(v);
      svg.appendChild(s("line", { x1: left, x2: left + plotW, y1: yy, y2: yy,
        stroke: Math.abs(v) < 1e-9 ? INK.zero : INK.grid }));
      if (Math.abs(v * 2 - Math.round(v * 2)) < 1e-9) {
        svg.appendChild(s("text", { x: left - 6, y: yy + 4, "text-anchor": "end" }, fmt(v, 2)));
      }
    }
    svg.appendChild(s("text", { x: left + plotW / 2, y: top + plotH + 38, "text-anchor": "middle",
      class: "cf-axis-label" }, "position m (tokens)"));
    svg.appendChild(s("text", { x: 14, y: top + plotH / 2, "text-anchor": "middle", class: "cf-axis-label",
      transform: `rotate(-90 14 ${top + plotH / 2})` }, "PE(m)ᵀ M PE(m+k) / (d/2)"));
    const legend = [
      [PALETTE.blue, "6 4", "M = I"],
      [PALETTE.orange, null, `M = I + R, R random (entries N(0, ${fmt(sigma, 2)}²))`],
    ];
    legend.forEach(([colour, dash, label], row) => {
      const lx = twoRows ? 8 : (row === 0 ? left : left + 90), ly = twoRows ? 12 + 17 * row : 14;
      const line = s("line", { x1: lx, x2: lx + 24, y1: ly, y2: ly, stroke: colour, "stroke-width": 3 });
      if (dash) line.setAttribute("stroke-dasharray", dash);
      svg.appendChild(line);
      svg.appendChild(s("text", { x: lx + 30, y: ly + 4 }, label));
    });
    guide.setAttribute("y1", top);
    guide.setAttribute("y2", top + plotH);
    svg.append(guide, identityLine, mixedLine, identityDot, handle);
  }

  let m = model.get("m");

  function current() {
    const i = distances.indexOf(model.get("k"));
    return { i, k: distances[i], identity: model.get("identity")[i], mixed: model.get("mixed")[i] };
  }

  function setM(value) {
    const next = Math.min(mMax, Math.max(0, Math.round(value)));
    if (next === m) return;
    m = next;
    model.set("m", m);
    model.save_changes();
    place();
  }

  const place = timed(root, () => {
    const { k, identity, mixed } = current();
    const a = mixed[m], b = identity[m];
    guide.setAttribute("x1", x(m));
    guide.setAttribute("x2", x(m));
    handle.setAttribute("cx", x(m));
    handle.setAttribute("cy", y(a));
    handle.setAttribute("data-m", m);
    handle.setAttribute("data-value", String(a));
    identityDot.setAttribute("cx", x(m));
    identityDot.setAttribute("cy", y(b));
    identityDot.setAttribute("data-value", String(b));
    slider.value = String(m);
    slider.setAttribute("aria-valuetext", `m = ${m}`);
    readout.textContent = `k = ${k}, m = ${m}: M = I + R gives ${fmt(a, 4)}, M = I gives ${fmt(b, 4)}`;
    readout.dataset.m = String(m);
    readout.dataset.mixed = String(a);
    readout.dataset.identity = String(b);
  });

  const draw = timed(root, () => {
    const { i, k, identity, mixed } = current();
    setK(k);
    const points = (values) => values.map((v, j) => `${x(j).toFixed(2)},${y(v).toFixed(2)}`).join(" ");
    identityLine.setAttribute("points", points(identity));
    identityLine.setAttribute("data-values", identity.join(","));
    mixedLine.setAttribute("points", points(mixed));
    mixedLine.setAttribute("data-values", mixed.join(","));
    place();
    const flat = model.get("flat")[i];
    live.textContent = `At distance k = ${k} the M = I curve is flat at ${fmt(flat, 3)} for every m; ` +
      `with M = I + R the value ranges from ${fmt(model.get("mixed_min")[i], 3)} (m = ${model.get("mixed_argmin")[i]}) ` +
      `to ${fmt(model.get("mixed_max")[i], 3)} (m = ${model.get("mixed_argmax")[i]}) over m = 0..${mMax}.`;
  });

  // dragging: anywhere on the plot, snapping to whole positions
  function mAt(event) {
    const p = svg.createSVGPoint();
    p.x = event.clientX;
    p.y = event.clientY;
    const local = p.matrixTransform(svg.getScreenCTM().inverse());
    return ((local.x - left) / plotW) * mMax;
  }
  let dragging = false;
  svg.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    dragging = true;
    svg.setPointerCapture(event.pointerId);
    handle.style.cursor = "grabbing";
    setM(mAt(event));
    event.preventDefault();
  });
  svg.addEventListener("pointermove", (event) => { if (dragging) setM(mAt(event)); });
  const stop = (event) => {
    if (!dragging) return;
    dragging = false;
    handle.style.cursor = "grab";
    if (svg.hasPointerCapture(event.pointerId)) svg.releasePointerCapture(event.pointerId);
  };
  svg.addEventListener("pointerup", stop);
  svg.addEventListener("pointercancel", stop);

  svg.addEventListener("keydown", (event) => {
    const steps = { ArrowLeft: -1, ArrowDown: -1, ArrowRight: 1, ArrowUp: 1, PageDown: -10, PageUp: 10 };
    if (event.key in steps) setM(m + steps[event.key]);
    else if (event.key === "Home") setM(0);
    else if (event.key === "End") setM(mMax);
    else return;
    event.preventDefault();
  });

  layout(body.clientWidth);
  if (typeof ResizeObserver !== "undefined") {
    new ResizeObserver(() => {
      const w = body.clientWidth;
      if (w && Math.abs(Math.min(640, Math.max(320, w)) - width) > 8) { layout(w); draw(); }
    }).observe(body);
  }

  model.on("change:k", draw);
  model.on("change:m", () => {
    if (model.get("m") !== m) { m = model.get("m"); place(); }
  });
  draw();
}

export default { render };
