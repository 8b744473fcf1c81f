// Chapter 3's figure: RoPE on one pair of components. Python (companion.figures.rope)
// supplies q, k, m, n and theta, and the starting score and curve from companion.rope.
// Because q and k are dragged continuously, this script redoes the one small
// computation itself (two plane rotations and a dot product) while it draws.

const ROPE_LEN = [0.2, 1.5];          // allowed arrow lengths (as in rope_rotation.py)
const ROPE_TURN = Math.PI / 36;       // 5 degrees per arrow key

function ropeRotate(v, angle) {
  const c = Math.cos(angle), sn = Math.sin(angle);
  return [c * v[0] - sn * v[1], sn * v[0] + c * v[1]];
}

// (R_{m theta} q) . (R_{n theta} k)
function ropeScore(q, k, m, n, theta) {
  const a = ropeRotate(q, m * theta), b = ropeRotate(k, n * theta);
  return a[0] * b[0] + a[1] * b[1];
}

// q^T R_{(n - m) theta} k as a function of d = m - n (any real d, for the drawn line)
function ropeRelative(q, k, d, theta) {
  const b = ropeRotate(k, -d * theta);
  return q[0] * b[0] + q[1] * b[1];
}

function ropeDegrees(v) {
  return ((Math.atan2(v[1], v[0]) * 180 / Math.PI) % 360 + 360) % 360;
}

function render({ model, el }) {
  const { root, controls, body, readout, live } = frame(el, "rope_rotation", model);

  const thetaText = h("span", { class: "cf-theta" });
  const shiftButton = h("button", { type: "button", class: "cf-shift", text: "Move both one later (+1)" });
  controls.append(thetaText, shiftButton);
  Object.assign(body.style, { display: "flex", flexWrap: "wrap", gap: ".5rem 1rem", alignItems: "flex-start" });
  const panel = () => {
    const div = h("div");
    Object.assign(div.style, { flex: "1 1 270px", maxWidth: "380px", minWidth: "0" });
    body.appendChild(div);
    return div;
  };

  // ---- left panel: the plane and the number line --------------------------------
  const W = 320, cx = 160, cy = 152, R = 92;
  const lineY = 326, lineX0 = 24, lineX1 = 296;
  const left = s("svg", { viewBox: `0 0 ${W} 388`, class: "cf-plane",
    "aria-label": "One pair of components as plane vectors: faint arrows q and k, bold arrows q and k rotated by their positions; below, a number line with the positions m and n" });
  panel().appendChild(left);
  left.appendChild(s("line", { x1: cx - 1.6 * R, x2: cx + 1.6 * R, y1: cy, y2: cy, stroke: INK.zero }));
  left.appendChild(s("line", { x1: cx, x2: cx, y1: cy - 1.6 * R, y2: cy + 1.6 * R, stroke: INK.zero }));
  left.appendChild(s("circle", { cx, cy, r: R, fill: "none", stroke: PALETTE.grey, "stroke-width": 1 }));
  left.appendChild(s("text", { x: cx + R * 0.72 + 4, y: cy + R * 0.72 + 14 }, "unit circle"));

  // a faint arrow (the content vector) is drawn see-through; its label is not, so it reads
  function makeArrow(name, colourName, bold) {
    const colour = PALETTE[colourName], faint = bold ? 1 : 0.45;
    const g = s("g", { class: "cf-arrow", "data-arrow": name });
    const line = s("line", { x1: cx, y1: cy, stroke: colour, "stroke-width": bold ? 4 : 2, "stroke-linecap": "round",
      opacity: faint });
    const head = s("polygon", { fill: colour, opacity: faint });
    const label = s("text", { "text-anchor": "middle", "font-weight": bold ? "600" : "400" });
    label.style.fill = textColour(colourName);
    g.append(line, head, label);
    left.appendChild(g);
    return { g, line, head, label, bold };
  }

  function placeArrow(arrow, v, text) {
    const x = cx + v[0] * R, y = cy - v[1] * R;
    const len = Math.hypot(v[0], v[1]) * R, ux = v[0] * R / len, uy = -v[1] * R / len;
    const hl = arrow.bold ? 13 : 10, hw = arrow.bold ? 6.5 : 5;
    const bx = x - ux * hl, by = y - uy * hl;
    arrow.line.setAttribute("x2", bx + ux * 1);
    arrow.line.setAttribute("y2", by + uy * 1);
    arrow.head.setAttribute("points",
      `${x},${y} ${bx - uy * hw},${by + ux * hw} ${bx + uy * hw},${by - ux * hw}`);
    // the label sits beyond the tip, kept inside the drawing (about 6.3 px per character)
    const half = text.length * 3.15 + 2;
    const lx = x + ux * (12 + half * Math.abs(ux)), fx = Math.min(W - half, Math.max(half, lx));
    const ly = y + uy * 16 + 4 + (fx === lx ? 0 : (uy > 0 ? 14 : -14));  // pushed in: step off the tip
    arrow.label.setAttribute("x", fx);
    arrow.label.setAttribute("y", Math.min(300, Math.max(12, ly)));
    arrow.label.textContent = text;
    arrow.g.setAttribute("data-x", String(v[0]));
    arrow.g.setAttribute("data-y", String(v[1]));
    arrow.g.setAttribute("data-angle", String(Math.atan2(v[1], v[0])));
  }

  // thin arcs (a slow spiral past a full turn) from each content arrow to its rotated copy
  const arcs = {
    q: s("path", { fill: "none", stroke: PALETTE.blue, "stroke-width": 1.2, opacity: 0.7, class: "cf-turn", "data-arc": "q" }),
    k: s("path", { fill: "none", stroke: PALETTE.vermillion, "stroke-width": 1.2, opacity: 0.7, class: "cf-turn", "data-arc": "k" }),
  };
  left.append(arcs.q, arcs.k);
  function placeArc(path, v, turn, radius) {
    const a0 = Math.atan2(v[1], v[0]), steps = Math.max(2, Math.ceil(Math.abs(turn) / 0.05));
    const pts = [];
    for (let i = 0; i <= steps; i++) {
      const a = a0 + turn * i / steps, r = radius + 2 * Math.abs(turn) * i / steps;
      pts.push(`${i ? "L" : "M"}${(cx + r * Math.cos(a)).toFixed(2)},${(cy - r * Math.sin(a)).toFixed(2)}`);
    }
    path.setAttribute("d", turn === 0 ? "" : pts.join(""));
  }

  const arrows = {
    q: makeArrow("q", "blue", false),
    k: makeArrow("k", "vermillion", false),
    qRot: makeArrow("q-rot", "blue", true),
    kRot: makeArrow("k-rot", "vermillion", true),
  };
  left.appendChild(s("circle", { cx, cy, r: 3, fill: INK.fg }));

  // Handles at the tips of the content arrows: drag them, or focus and use the arrow keys.
  function makeHandle(name, colour) {
    const c = s("circle", { r: 8, class: "cf-handle", "data-handle": name, tabindex: "0", role: "slider",
      "aria-label": `content arrow ${name}: left and right arrow keys turn it by 5 degrees, up and down change its length`,
      "aria-valuemin": "0", "aria-valuemax": "360", fill: colour, "fill-opacity": 0.2, stroke: colour,
      "stroke-width": 1.5, cursor: "grab" });
    left.appendChild(c);
    return c;
  }
  const handles = { q: makeHandle("q", PALETTE.blue), k: makeHandle("k", PALETTE.vermillion) };

  // number line 0 .. max_position with the markers m (above) and n (below)
  const ticks = s("g", { class: "cf-ticks" });
  left.appendChild(ticks);
  left.appendChild(s("text", { x: (lineX0 + lineX1) / 2, y: 380, "text-anchor": "middle", class: "cf-axis-label" },
    "position (tokens)"));
  let drawnMax = null;
  const xOfPos = (p) => lineX0 + (lineX1 - lineX0) * p / model.get("max_position");

  function drawTicks() {
    const maxPos = model.get("max_position");
    if (drawnMax === maxPos) return;
    drawnMax = maxPos;
    ticks.replaceChildren(s("line", { x1: lineX0, x2: lineX1, y1: lineY, y2: lineY, stroke: INK.axis }));
    const every = maxPos <= 20 ? 1 : Math.ceil(maxPos / 15);
    for (let p = 0; p <= maxPos; p += every) {
      ticks.appendChild(s("line", { x1: xOfPos(p), x2: xOfPos(p), y1: lineY - 4, y2: lineY + 4, stroke: INK.axis }));
      const t = s("text", { x: xOfPos(p), y: lineY + 30, "text-anchor": "middle" }, String(p));
      t.style.fontSize = "9px";
      ticks.appendChild(t);
    }
  }

  function makeMarker(name, colourName, above) {
    const colour = PALETTE[colourName];
    const g = s("g", { class: "cf-marker", "data-marker": name, tabindex: "0", role: "slider",
      "aria-label": name === "m" ? "query position m" : "key position n", "aria-valuemin": "0", cursor: "grab" });
    const sign = above ? -1 : 1;
    g.appendChild(s("rect", { x: -10, y: above ? -34 : 2, width: 20, height: 32, fill: "transparent" }));
    g.appendChild(s("polygon", { points: `0,${sign * 2} -7,${sign * 15} 7,${sign * 15}`, fill: colour }));
    const label = s("text", above ? { x: 0, y: -20, "text-anchor": "middle", "font-weight": "600" }
      : { x: 10, y: 16, "text-anchor": "start", "font-weight": "600" }, name);
    label.style.fill = textColour(colourName);
    g.appendChild(label);
    left.appendChild(g);
    return g;
  }
  const markers = { m: makeMarker("m", "blue", true), n: makeMarker("n", "vermillion", false) };

  // ---- right panel: the score against m - n ----------------------------------------
  const RW = 340, RH = 300, pl = 52, pr = 330, pt = 14, pb = 250;
  const right = s("svg", { viewBox: `0 0 ${RW} ${RH}`, class: "cf-curve",
    "aria-label": "The score after rotation against m minus n, with the current score as a point" });
  panel().appendChild(right);
  const grid = s("g");
  const curveLine = s("path", { fill: "none", stroke: PALETTE.grey, "stroke-width": 1.5, class: "cf-curve-line" });
  const dots = s("g", { class: "cf-curve-dots" });
  const guides = s("g");
  const guideV = s("line", { stroke: PALETTE.green, "stroke-dasharray": "3 3", "stroke-width": 1 });
  const guideH = s("line", { stroke: PALETTE.green, "stroke-dasharray": "3 3", "stroke-width": 1 });
  guides.append(guideV, guideH);
  const point = s("circle", { r: 7, fill: PALETTE.green, stroke: INK.fg, "stroke-width": 1.2, class: "cf-score-point" });
  const pointLabel = s("text", { "font-weight": "600", fill: INK.fg });
  right.append(grid, guides, curveLine, dots, point, pointLabel);
  right.appendChild(s("text", { x: (pl + pr) / 2, y: RH - 8, "text-anchor": "middle", class: "cf-axis-label" },
    "m − n (positions)"));
  right.appendChild(s("text", { x: 13, y: (pt + pb) / 2, "text-anchor": "middle", class: "cf-axis-label",
    transform: `rotate(-90 13 ${(pt + pb) / 2})` }, "score q·k after rotation"));

  let yMax = null, gridFor = null;
  const xOfD = (d) => pl + (pr - pl) * (d + model.get("max_position")) / (2 * model.get("max_position"));
  const yOfS = (v) => pt + (pb - pt) * (yMax - v) / (2 * yMax);

  function drawGrid() {
    const maxPos = model.get("max_position");
    if (gridFor === `${yMax} ${maxPos}`) return;
    gridFor = `${yMax} ${maxPos}`;
    grid.replaceChildren();
    const step = yMax > 1.25 ? 0.5 : 0.25;
    for (let v = -yMax; v <= yMax + 1e-9; v += step) {
      const y = yOfS(v);
      grid.appendChild(s("line", { x1: pl, x2: pr, y1: y, y2: y, stroke: Math.abs(v) < 1e-9 ? INK.zero : INK.grid }));
      grid.appendChild(s("text", { x: pl - 5, y: y + 4, "text-anchor": "end" }, fmt(Math.round(v * 100) / 100, 3)));
    }
    const xStep = maxPos <= 20 ? 5 : Math.ceil(maxPos / 4);
    for (let d = -Math.floor(maxPos / xStep) * xStep; d <= maxPos; d += xStep) {
      const x = xOfD(d);
      grid.appendChild(s("line", { x1: x, x2: x, y1: pt, y2: pb, stroke: d === 0 ? INK.zero : INK.grid }));
      grid.appendChild(s("text", { x, y: pb + 15, "text-anchor": "middle" }, String(d)));
    }
    grid.appendChild(s("rect", { x: pl, y: pt, width: pr - pl, height: pb - pt, fill: "none", stroke: INK.axis }));
  }

  // ---- interaction -------------------------------------------------------------------
  function setVector(name, v) {
    let len = Math.hypot(v[0], v[1]);
    if (!(len > 0)) return;
    const target = Math.min(ROPE_LEN[1], Math.max(ROPE_LEN[0], len));
    const out = [v[0] * target / len, v[1] * target / len].map((x) => Math.round(x * 1e4) / 1e4);
    // rounding may step just outside the allowed lengths; pull it back in
    len = Math.hypot(out[0], out[1]);
    if (len < ROPE_LEN[0] || len > ROPE_LEN[1]) {
      const f = (len < ROPE_LEN[0] ? ROPE_LEN[0] + 1e-4 : ROPE_LEN[1] - 1e-4) / len;
      out[0] = Math.round(out[0] * f * 1e4) / 1e4;
      out[1] = Math.round(out[1] * f * 1e4) / 1e4;
    }
    model.set(name, out);
    model.save_changes();
  }

  function setPositions(m, n, why) {
    const maxPos = model.get("max_position");
    m = Math.min(maxPos, Math.max(0, Math.round(m)));
    n = Math.min(maxPos, Math.max(0, Math.round(n)));
    note = why || "";
    if (m === model.get("m") && n === model.get("n")) { draw(); return; }
    model.set("m", m);
    model.set("n", n);
    model.save_changes();
  }
  let note = "";

  shiftButton.addEventListener("click", () => {
    const maxPos = model.get("max_position");
    let m = model.get("m"), n = model.get("n");
    if (Math.max(m, n) + 1 > maxPos) {
      const low = Math.min(m, n);
      if (low === 0) { setPositions(m, n, `The positions already span 0 to ${maxPos}; nothing to shift.`); return; }
      setPositions(m - low, n - low, `Position ${maxPos} reached: both moved back by ${low}, so the smaller is 0.`);
    } else {
      setPositions(m + 1, n + 1, "Both moved one position later: both bold arrows turned by θ together.");
    }
  });

  function svgPoint(svg, event) {
    const p = svg.createSVGPoint();
    p.x = event.clientX;
    p.y = event.clientY;
    return p.matrixTransform(svg.getScreenCTM().inverse());
  }

  let dragging = null;
  for (const [name, handle] of Object.entries(handles)) {
    handle.addEventListener("pointerdown", (event) => {
      event.preventDefault();
      dragging = name;
      handle.focus();
      left.setPointerCapture(event.pointerId);
    });
    handle.addEventListener("keydown", (event) => {
      const v = model.get(name);
      let angle = Math.atan2(v[1], v[0]), len = Math.hypot(v[0], v[1]);
      if (event.key === "ArrowLeft") angle += ROPE_TURN;
      else if (event.key === "ArrowRight") angle -= ROPE_TURN;
      else if (event.key === "ArrowUp") len = Math.min(ROPE_LEN[1], Math.round((len + 0.1) * 1e6) / 1e6);
      else if (event.key === "ArrowDown") len = Math.max(ROPE_LEN[0], Math.round((len - 0.1) * 1e6) / 1e6);
      else return;
      event.preventDefault();
      note = "";
      setVector(name, [len * Math.cos(angle), len * Math.sin(angle)]);
    });
  }
  for (const [name, marker] of Object.entries(markers)) {
    marker.addEventListener("pointerdown", (event) => {
      event.preventDefault();
      dragging = name;
      marker.focus();
      left.setPointerCapture(event.pointerId);
    });
    marker.addEventListener("keydown", (event) => {
      const maxPos = model.get("max_position");
      let p = model.get(name);
      if (event.key === "ArrowLeft" || event.key === "ArrowDown") p -= 1;
      else if (event.key === "ArrowRight" || event.key === "ArrowUp") p += 1;
      else if (event.key === "Home") p = 0;
      else if (event.key === "End") p = maxPos;
      else return;
      event.preventDefault();
      if (name === "m") setPositions(p, model.get("n"));
      else setPositions(model.get("m"), p);
    });
  }
  left.addEventListener("pointermove", (event) => {
    if (!dragging) return;
    const p = svgPoint(left, event);
    note = "";
    if (dragging === "q" || dragging === "k") {
      setVector(dragging, [(p.x - cx) / R, (cy - p.y) / R]);
    } else {
      const pos = (p.x - lineX0) / (lineX1 - lineX0) * model.get("max_position");
      if (dragging === "m") setPositions(pos, model.get("n"));
      else setPositions(model.get("m"), pos);
    }
  });
  const stop = (event) => {
    if (!dragging) return;
    dragging = null;
    if (left.hasPointerCapture(event.pointerId)) left.releasePointerCapture(event.pointerId);
  };
  left.addEventListener("pointerup", stop);
  left.addEventListener("pointercancel", stop);

  // ---- drawing -------------------------------------------------------------------------
  const draw = timed(root, () => {
    const q = model.get("q"), k = model.get("k"), m = model.get("m"), n = model.get("n");
    const theta = model.get("theta"), maxPos = model.get("max_position");
    const qRot = ropeRotate(q, m * theta), kRot = ropeRotate(k, n * theta);
    const score = ropeScore(q, k, m, n, theta);
    const d = m - n;

    thetaText.textContent = `θ = ${fmt(theta, 3)} rad per position`;
    placeArc(arcs.q, q, m * theta, Math.min(0.3, 0.5 * Math.hypot(q[0], q[1])) * R);
    placeArc(arcs.k, k, n * theta, Math.min(0.42, 0.5 * Math.hypot(k[0], k[1])) * R);
    // a content arrow turned by (nearly) a whole number of turns hides under its rotated copy
    const hidden = (turn) => Math.abs(((turn + Math.PI) % (2 * Math.PI) + 2 * Math.PI) % (2 * Math.PI) - Math.PI) < 0.15;
    placeArrow(arrows.q, q, hidden(m * theta) ? "" : "q");
    placeArrow(arrows.k, k, hidden(n * theta) ? "" : "k");
    placeArrow(arrows.qRot, qRot, `R(${m}θ)q`);
    placeArrow(arrows.kRot, kRot, `R(${n}θ)k`);
    for (const [name, v] of [["q", q], ["k", k]]) {
      const handle = handles[name];
      handle.setAttribute("cx", cx + v[0] * R);
      handle.setAttribute("cy", cy - v[1] * R);
      handle.setAttribute("aria-valuenow", ropeDegrees(v).toFixed(0));
      handle.setAttribute("aria-valuetext",
        `${name}: angle ${ropeDegrees(v).toFixed(0)} degrees, length ${fmt(Math.hypot(v[0], v[1]), 3)}`);
    }
    drawTicks();
    for (const [name, p] of [["m", m], ["n", n]]) {
      const marker = markers[name];
      marker.setAttribute("transform", `translate(${xOfPos(p)} ${lineY})`);
      marker.setAttribute("aria-valuemax", String(maxPos));
      marker.setAttribute("aria-valuenow", String(p));
      marker.setAttribute("data-position", String(p));
    }
    left.setAttribute("data-m", String(m));
    left.setAttribute("data-n", String(n));
    left.setAttribute("data-theta", String(theta));

    // curve: a thin line through all real m - n, dots at the integer ones
    const amp = Math.hypot(q[0], q[1]) * Math.hypot(k[0], k[1]);
    const step = amp * 1.1 > 1.25 ? 0.5 : 0.25;
    yMax = Math.max(step, Math.ceil(amp * 1.1 / step) * step);
    drawGrid();
    const parts = [];
    for (let i = 0; i <= 20 * maxPos; i++) {
      const x = -maxPos + i / 10;
      parts.push(`${i ? "L" : "M"}${xOfD(x).toFixed(2)},${yOfS(ropeRelative(q, k, x, theta)).toFixed(2)}`);
    }
    curveLine.setAttribute("d", parts.join(""));
    if (dots.childElementCount !== 2 * maxPos + 1) {
      dots.replaceChildren();
      for (let j = -maxPos; j <= maxPos; j++) dots.appendChild(s("circle", { r: 2.4, fill: INK.muted, class: "cf-curve-dot", "data-d": j }));
    }
    for (const dot of dots.children) {
      const j = Number(dot.dataset.d), v = ropeRelative(q, k, j, theta);
      dot.setAttribute("cx", xOfD(j));
      dot.setAttribute("cy", yOfS(v));
      dot.setAttribute("data-value", String(v));
    }
    const px = xOfD(d), py = yOfS(score);
    point.setAttribute("cx", px);
    point.setAttribute("cy", py);
    point.setAttribute("data-score", String(score));
    point.setAttribute("data-x", String(d));
    point.setAttribute("data-y", String(score));
    point.setAttribute("data-cx", px.toFixed(4));
    point.setAttribute("data-cy", py.toFixed(4));
    guideV.setAttribute("x1", px); guideV.setAttribute("x2", px);
    guideV.setAttribute("y1", py); guideV.setAttribute("y2", pb);
    guideH.setAttribute("x1", pl); guideH.setAttribute("x2", px);
    guideH.setAttribute("y1", py); guideH.setAttribute("y2", py);
    pointLabel.textContent = fmt(score, 3);
    pointLabel.setAttribute("x", d > maxPos / 2 ? px - 10 : px + 10);
    pointLabel.setAttribute("text-anchor", d > maxPos / 2 ? "end" : "start");
    pointLabel.setAttribute("y", py < pt + 20 ? py + 20 : py - 10);

    readout.textContent = `m = ${m}, n = ${n}, m − n = ${d}: q turned by ${fmt(m * theta, 3)} rad, ` +
      `k by ${fmt(n * theta, 3)} rad; score ${fmt(score, 4)}`;
    live.textContent = `${note ? note + " " : ""}Query position m = ${m}, key position n = ${n}, m − n = ${d}. ` +
      `q has length ${fmt(Math.hypot(q[0], q[1]), 3)} at ${ropeDegrees(q).toFixed(0)} degrees and is turned to ` +
      `${ropeDegrees(qRot).toFixed(0)} degrees; k has length ${fmt(Math.hypot(k[0], k[1]), 3)} at ` +
      `${ropeDegrees(k).toFixed(0)} degrees and is turned to ${ropeDegrees(kRot).toFixed(0)} degrees. ` +
      `Score after rotation: ${fmt(score, 3)}, the same for every pair of positions with m − n = ${d}.`;
  });

  for (const name of ["q", "k", "m", "n", "theta", "max_position"]) model.on(`change:${name}`, draw);
  draw();
}

export default { render };
