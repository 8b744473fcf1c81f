// Typeset the book's TeX at build time as MathML, with Temml (npm temml, pinned in
// package.json), so that a page ships MathML, which every current browser lays out
// itself and screen readers read, instead of a script that typesets in the browser.
//
// Called by bookwork/sphinx/offline/math_typesetting.py: reads on stdin
//   {"macros": {"Attn": "\\operatorname{Attn}", ...}, "pages": [{"formulas": [{"tex": "...", "display": false}]}]}
// and writes on stdout, per page, the MathML of each formula and every TeX error, so
// that the build can fail on it.
"use strict";
const temml = require("temml");

function typeset(formula, macros, errors, index) {
  const options = { displayMode: formula.display, macros: { ...macros }, throwOnError: true };
  try {
    return temml.renderToString(formula.tex, options);
  } catch (error) {
    errors.push(`formula ${index + 1} (${formula.tex.trim().slice(0, 80)}): ${error.message.trim()}`);
    return temml.renderToString(formula.tex, { ...options, throwOnError: false });
  }
}

function main(request) {
  // Temml names a macro with its backslash; the book's configuration does not.
  const macros = Object.fromEntries(
    Object.entries(request.macros || {}).map(([name, body]) => [name.startsWith("\\") ? name : `\\${name}`, body]));
  return request.pages.map((page) => {
    const errors = [];
    const html = page.formulas.map((formula, index) => typeset(formula, macros, errors, index));
    return { html, errors };
  });
}

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  process.stdout.write(JSON.stringify(main(JSON.parse(input))));
});
