// Chapter 0's figure. Every number comes from Python (companion.figures.permutation);
// this file only draws the selected order and reacts to the reader.

const CSS = `
.pe-perm { font: 14px/1.4 system-ui, sans-serif; max-width: 40rem; }
.pe-perm fieldset { border: 0; padding: 0; margin: 0 0 .5rem 0; }
.pe-perm legend { font-size: 1rem; font-weight: 600; margin-bottom: .25rem; padding: 0; }
.pe-perm .pe-orders { display: flex; flex-wrap: wrap; gap: .35rem; }
.pe-perm button { font: inherit; padding: .2rem .55rem; border: 1px solid #555; border-radius: .3rem;
  background: #fff; color: #111; cursor: pointer; }
.pe-perm button[aria-pressed="true"] { background: #1f4e79; color: #fff; border-color: #1f4e79; }
.pe-perm button:focus-visible, .pe-perm input:focus-visible { outline: 3px solid #e69f00; outline-offset: 2px; }
.pe-perm .pe-panels { display: flex; flex-wrap: wrap; gap: 1rem; margin-top: .5rem; }
.pe-perm table { border-collapse: collapse; }
.pe-perm caption { caption-side: top; text-align: left; font-weight: 600; padding-bottom: .2rem; }
.pe-perm td, .pe-perm th { width: 2.6rem; height: 1.9rem; text-align: center; font-size: 12px;
  border: 1px solid #ddd; padding: 0 .15rem; }
.pe-perm th { background: #f3f3f3; font-weight: 600; }
.pe-perm td.pe-flag { width: 4.5rem; font-weight: 600; }
.pe-perm td.pe-same { color: #1b7837; }
.pe-perm td.pe-differs { color: #b35806; }
.pe-perm .pe-summary { margin-top: .5rem; }
`;

function blues(t) {
  // white -> dark blue, t in [0, 1]
  const a = [247, 251, 255], b = [8, 48, 107];
  const c = a.map((x, i) => Math.round(x + (b[i] - x) * t));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

function diverging(t) {
  // purple-orange (colour-blind safe), t in [-1, 1]
  const neg = [84, 39, 136], mid = [247, 247, 247], pos = [179, 88, 6];
  const end = t < 0 ? neg : pos, s = Math.min(1, Math.abs(t));
  const c = mid.map((x, i) => Math.round(x + (end[i] - x) * s));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

function cell(tag, text, attrs = {}) {
  const node = document.createElement(tag);
  node.textContent = text;
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "pe-perm";
  const style = document.createElement("style");
  style.textContent = CSS;
  root.appendChild(style);

  const orderSet = document.createElement("fieldset");
  orderSet.appendChild(cell("legend", "Order of the tokens fed to attention"));
  const orderRow = document.createElement("div");
  orderRow.className = "pe-orders";
  orderSet.appendChild(orderRow);
  root.appendChild(orderSet);

  const maskLabel = document.createElement("label");
  const mask = document.createElement("input");
  mask.type = "checkbox";
  mask.className = "pe-mask";
  maskLabel.appendChild(mask);
  maskLabel.appendChild(document.createTextNode(" causal mask (token i sees only tokens 0..i)"));
  root.appendChild(maskLabel);

  const panels = document.createElement("div");
  panels.className = "pe-panels";
  root.appendChild(panels);
  const summary = cell("p", "", { class: "pe-summary", "aria-live": "polite" });
  root.appendChild(summary);
  el.appendChild(root);

  const orders = model.get("orders");
  const buttons = orders.map((order, index) => {
    const b = cell("button", order.join(" "), { type: "button", "data-order": String(index) });
    b.addEventListener("click", () => { model.set("order_index", index); model.save_changes(); });
    orderRow.appendChild(b);
    return b;
  });
  mask.addEventListener("change", () => { model.set("causal", mask.checked); model.save_changes(); });

  function draw() {
    const index = model.get("order_index");
    const causal = model.get("causal");
    const order = orders[index];
    const result = model.get("results")[causal ? "causal" : "none"][index];
    buttons.forEach((b, i) => b.setAttribute("aria-pressed", String(i === index)));
    mask.checked = causal;
    panels.replaceChildren();

    const weights = document.createElement("table");
    weights.className = "pe-weights";
    weights.appendChild(cell("caption", "Attention weights (row: query, column: key)"));
    const head = document.createElement("tr");
    head.appendChild(cell("th", ""));
    order.forEach((t) => head.appendChild(cell("th", t, { scope: "col" })));
    weights.appendChild(head);
    result.weights.forEach((row, i) => {
      const tr = document.createElement("tr");
      tr.appendChild(cell("th", order[i], { scope: "row" }));
      row.forEach((w) => {
        const td = cell("td", w.toFixed(2), { "data-value": String(w) });
        td.style.background = blues(w);
        td.style.color = w > 0.55 ? "#fff" : "#111";
        tr.appendChild(td);
      });
      weights.appendChild(tr);
    });
    panels.appendChild(weights);

    const outputs = document.createElement("table");
    outputs.className = "pe-outputs";
    outputs.appendChild(cell("caption", "Output rows, and whether each equals that token's row for the order A B C"));
    const scale = Math.max(...result.outputs.flat().map(Math.abs), 1e-9);
    result.outputs.forEach((row, i) => {
      const tr = document.createElement("tr");
      tr.setAttribute("data-token", order[i]);
      tr.appendChild(cell("th", order[i], { scope: "row" }));
      row.forEach((x) => {
        const td = cell("td", x.toFixed(2), { "data-value": String(x) });
        td.style.background = diverging(x / scale);
        td.style.color = Math.abs(x / scale) > 0.6 ? "#fff" : "#111";
        tr.appendChild(td);
      });
      const same = result.same_as_original[i];
      tr.appendChild(cell("td", same ? "✓ same" : "✗ differs",
        { class: "pe-flag " + (same ? "pe-same" : "pe-differs"), "data-same": String(same) }));
      outputs.appendChild(tr);
    });
    panels.appendChild(outputs);

    const kept = order.filter((_, i) => result.same_as_original[i]);
    summary.textContent = `Order ${order.join(", ")}, ${causal ? "with" : "without"} the causal mask: ` +
      (kept.length === order.length
        ? "every token's output row is exactly the row it had in the order A, B, C; only the rows' order changed."
        : `${kept.length} of ${order.length} tokens keep their output row (${kept.join(", ") || "none"}); ` +
          "the mask depends on where a token stands, so reordering changes what it can see.");
  }

  model.on("change:order_index", draw);
  model.on("change:causal", draw);
  draw();
}

export default { render };
