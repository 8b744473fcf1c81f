// Draw the book's figures from the widget state saved in the page, with no kernel.
//
// Every figure is an anywidget (https://anywidget.dev): its saved state holds both
// its numbers and its drawing module (the `_esm` trait, an ES module's source). This
// script does for those figures what the general Jupyter widget manager would, in a
// few kilobytes instead of several megabytes: for each widget view the page holds, it
// builds a small model over the saved state (get, set, on, off, save_changes, send,
// as in anywidget's front-end module interface) and calls the module's `render`.
// There is no kernel, so `save_changes` and `send` only keep the page's copy; the
// figures compute in the page from the data Python saved. A view of any other kind
// of widget is reported on the console, because this page could not draw it.
(function () {
  "use strict";
  const STATE_TYPE = "application/vnd.jupyter.widget-state+json";
  const VIEW_TYPE = "application/vnd.jupyter.widget-view+json";

  function readState() {
    const states = {};
    for (const script of document.querySelectorAll(`script[type="${STATE_TYPE}"]`)) {
      Object.assign(states, JSON.parse(script.textContent).state);
    }
    return states;
  }

  // Binary traits travel as base64 buffers beside the state; put them back in place.
  function withBuffers(saved) {
    const state = structuredClone(saved.state || {});
    for (const buffer of saved.buffers || []) {
      const bytes = Uint8Array.from(atob(buffer.data), (c) => c.charCodeAt(0));
      let target = state;
      buffer.path.slice(0, -1).forEach((key) => { target = target[key]; });
      target[buffer.path[buffer.path.length - 1]] = new DataView(bytes.buffer);
    }
    return state;
  }

  function same(a, b) {
    return a === b || JSON.stringify(a) === JSON.stringify(b);
  }

  class StaticModel {
    constructor(id, state, manager) {
      this.model_id = id;
      this.state = state;
      this.listeners = new Map();
      this.widget_manager = manager;
    }
    get(name) { return this.state[name]; }
    set(name, value) {
      if (same(this.state[name], value)) return;
      this.state[name] = value;
      this.emit(`change:${name}`, this, value);
      this.emit("change", this);
    }
    on(event, callback) {
      for (const name of event.split(/\s+/)) {
        if (!this.listeners.has(name)) this.listeners.set(name, new Set());
        this.listeners.get(name).add(callback);
      }
    }
    off(event, callback) {
      const names = event ? event.split(/\s+/) : [...this.listeners.keys()];
      for (const name of names) {
        if (callback) this.listeners.get(name)?.delete(callback);
        else this.listeners.delete(name);
      }
    }
    emit(name, ...args) {
      for (const callback of [...(this.listeners.get(name) || [])]) callback(...args);
    }
    save_changes() {}  // no kernel to send the changes to
    send() {}
  }

  async function loadModule(source) {
    const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
    try {
      const module = await import(url);
      const widget = module.default ?? module;
      return typeof widget === "function" ? await widget() : widget;
    } finally {
      URL.revokeObjectURL(url);
    }
  }

  async function drawAll() {
    const saved = readState();
    const models = new Map();
    const manager = { get_model: async (id) => models.get(id) };
    const modules = new Map();
    for (const script of document.querySelectorAll(`script[type="${VIEW_TYPE}"]`)) {
      const id = JSON.parse(script.textContent).model_id;
      const entry = saved[id];
      if (!entry || entry.model_module !== "anywidget") {
        console.error(`anywidget-static: cannot draw widget ${id} (${entry ? entry.model_name : "no saved state"})`);
        continue;
      }
      try {
        if (!models.has(id)) {
          const model = new StaticModel(id, withBuffers(entry), manager);
          models.set(id, model);
          const source = model.get("_esm");
          if (!modules.has(source)) modules.set(source, loadModule(source));
          const widget = await modules.get(source);
          if (widget.initialize) await widget.initialize({ model, experimental: {} });
        }
        const model = models.get(id);
        const widget = await modules.get(model.get("_esm"));
        const el = document.createElement("div");
        el.className = "anywidget-static";
        if (model.get("_css")) el.appendChild(Object.assign(document.createElement("style"), { textContent: model.get("_css") }));
        script.replaceWith(el);
        await widget.render({ model, el, experimental: {} });
      } catch (error) {
        console.error(`anywidget-static: widget ${id} failed to draw:`, error);
      }
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", drawAll);
  else drawAll();
})();
