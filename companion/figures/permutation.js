// Chapter 0's figure. Every number comes from Python (companion.figures.permutation);
// this script only draws the selected order and reacts to the reader.

const PERMUTATION_CSS = `
.pe-perm .pe-panels { display: flex; flex-wrap: wrap; gap: 1rem; }
.pe-perm table { border-collapse: collapse; }
.pe-perm caption { caption-side: top; text-align: left; font-weight: 600; padding-bottom: .2rem; }
.pe-perm td, .pe-perm th { width: 2.6rem; height: 1.9rem; text-align: center; font-size: 12px;
  border: 1px solid var(--cf-border); padding: 0 .15rem; }
.pe-perm th { background: var(--cf-surface-2); font-weight: 600; }
.pe-perm td.pe-flag { width: 4.5rem; font-weight: 600; }
.pe-perm td.pe-same { color: var(--cf-text-green); }
.pe-perm td.pe-differs { color: var(--cf-text-vermillion); }
`;

function blues(t) {
  // white -> dark blue, t in [0, 1]
  const a = [247, 251, 255], b = [8, 48, 107];
  const c = a.map((x, i) => Math.round(x + (b[i] - x) * t));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

function purpleOrange(t) {
  // purple - white - orange (colour-blind safe), t in [-1, 1]
  const neg = [84, 39, 136], mid = [247, 247, 247], pos = [179, 88, 6];
  const end = t < 0 ? neg : pos, f = Math.min(1, Math.abs(t));
  const c = mid.map((x, i) => Math.round(x + (end[i] - x) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

function render({ model, el }) {
  const { root, controls, body, readout, live } = frame(el, "permutation_explorer", model);
  root.classList.add("pe-perm");
  root.appendChild(h("style", { text: PERMUTATION_CSS }));
  const orders = model.get("orders");
  const setOrder = toggleGroup(controls, "Order", orders.map((order, i) => [i, order.join(" ")]),
    (i) => { model.set("order_index", i); model.save_changes(); });
  const mask = h("input", { type: "checkbox", class: "pe-mask" });
  controls.appendChild(h("label", {}, [mask, document.createTextNode(" causal mask (token i sees tokens 0..i)")]));
  mask.addEventListener("change", () => { model.set("causal", mask.checked); model.save_changes(); });
  const panels = h("div", { class: "pe-panels" });
  body.appendChild(panels);

  const draw = timed(root, () => {
    const index = model.get("order_index");
    const causal = model.get("causal");
    const order = orders[index];
    const result = model.get("results")[causal ? "causal" : "none"][index];
    setOrder(index);
    mask.checked = causal;
    panels.replaceChildren();

    const weights = h("table", { class: "pe-weights" }, [h("caption", { text: "Attention weights (row: query, column: key)" })]);
    weights.appendChild(h("tr", {}, [h("th"), ...order.map((t) => h("th", { scope: "col", text: t }))]));
    result.weights.forEach((row, i) => {
      const tr = h("tr", {}, [h("th", { scope: "row", text: order[i] })]);
      row.forEach((w) => {
        const td = h("td", { "data-value": String(w), text: w.toFixed(2) });
        td.style.background = blues(w);
        td.style.color = inkOn(blues(w));
        tr.appendChild(td);
      });
      weights.appendChild(tr);
    });
    panels.appendChild(weights);

    const outputs = h("table", { class: "pe-outputs" },
      [h("caption", { text: "Output rows, and whether each equals that token's row for the order A B C" })]);
    const scale = Math.max(...result.outputs.flat().map(Math.abs), 1e-9);
    result.outputs.forEach((row, i) => {
      const tr = h("tr", { "data-token": order[i] }, [h("th", { scope: "row", text: order[i] })]);
      row.forEach((x) => {
        const td = h("td", { "data-value": String(x), text: x.toFixed(2) });
        td.style.background = purpleOrange(x / scale);
        td.style.color = inkOn(purpleOrange(x / scale));
        tr.appendChild(td);
      });
      const same = result.same_as_original[i];
      tr.appendChild(h("td", { class: "pe-flag " + (same ? "pe-same" : "pe-differs"), "data-same": String(same),
        text: same ? "✓ same" : "✗ differs" }));
      outputs.appendChild(tr);
    });
    panels.appendChild(outputs);

    const kept = order.filter((_, i) => result.same_as_original[i]);
    const summary = `Order ${order.join(", ")}, ${causal ? "with" : "without"} the causal mask: ` +
      (kept.length === order.length
        ? "every token's output row is exactly the row it had in the order A, B, C; only the rows' order changed."
        : `${kept.length} of ${order.length} tokens keep their output row (${kept.join(", ") || "none"}); ` +
          "the mask depends on where a token stands, so reordering changes what it can see.");
    readout.textContent = summary;
    live.textContent = summary;
  });

  model.on("change:order_index", draw);
  model.on("change:causal", draw);
  draw();
}

export default { render };
