// Typeset the book's TeX at build time with MathJax (npm mathjax-full, pinned in
// package.json), so that a page ships HTML and a few small fonts instead of a 1 MB
// script that typesets in the reader's browser.
//
// Called by book/_ext/offline_assets.py: reads on stdin
//   {"macros": {...}, "assistive": true, "pages": [{"fontURL": "...", "formulas": [{"tex": "...", "display": false}]}]}
// and writes on stdout, per page, the HTML of each formula (CommonHTML output, with
// MathML for screen readers) and the CSS that page needs (only the characters it uses),
// plus every TeX error, so that the build can fail on it.
"use strict";
const { mathjax } = require("mathjax-full/js/mathjax.js");
const { TeX } = require("mathjax-full/js/input/tex.js");
const { CHTML } = require("mathjax-full/js/output/chtml.js");
const { liteAdaptor } = require("mathjax-full/js/adaptors/liteAdaptor.js");
const { RegisterHTMLHandler } = require("mathjax-full/js/handlers/html.js");
const { AssistiveMmlHandler } = require("mathjax-full/js/a11y/assistive-mml.js");
const { AllPackages } = require("mathjax-full/js/input/tex/AllPackages.js");

// The packages the browser build of MathJax has (loaded or autoloaded), without those
// that hide mistakes (noerrors, noundefined) or redefine common commands (physics).
const LEFT_OUT = new Set(["noerrors", "noundefined", "physics", "colorv2", "autoload", "require"]);
const PACKAGES = AllPackages.filter((name) => !LEFT_OUT.has(name));

function main(request) {
  const adaptor = liteAdaptor();
  const handler = RegisterHTMLHandler(adaptor);
  if (request.assistive) AssistiveMmlHandler(handler);
  return request.pages.map((page) => {
    const errors = [];
    const tex = new TeX({
      packages: PACKAGES,
      macros: request.macros || {},
      formatError(jax, error) {
        errors.push(error.message);
        return jax.formatError(error);
      },
    });
    const chtml = new CHTML({ fontURL: page.fontURL, adaptiveCSS: true });
    const document = mathjax.document("", { InputJax: tex, OutputJax: chtml });
    const html = page.formulas.map((formula, index) => {
      const before = errors.length;
      const node = document.convert(formula.tex, { display: formula.display, em: 16, ex: 8, containerWidth: 720 });
      for (let i = before; i < errors.length; i++) errors[i] = `formula ${index + 1} (${formula.tex.trim().slice(0, 80)}): ${errors[i]}`;
      return adaptor.outerHTML(node);
    });
    const css = adaptor.textContent(chtml.styleSheet(document));
    return { html, css, errors };
  });
}

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  process.stdout.write(JSON.stringify(main(JSON.parse(input))));
});
