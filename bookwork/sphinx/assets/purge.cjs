// Remove the rules no page can match from the theme's stylesheets, with PurgeCSS
// (npm purgecss, pinned in package.json). Called by bookwork/sphinx/offline/css_purge.py after
// the build:  stdin {"content": [globs of HTML and JS], "css": [stylesheet paths]}.
// Each stylesheet is rewritten in place. A rule is kept when every class, id and
// element it names occurs somewhere in the site's pages or scripts, so classes that
// the theme's scripts add later (a drawer's "show", the dark theme) stay.
"use strict";
const fs = require("fs");
const { PurgeCSS } = require("purgecss");

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", async () => {
  const request = JSON.parse(input);
  const results = await new PurgeCSS().purge({
    content: request.content,
    css: request.css,
    safelist: { standard: [/^data-/], greedy: [/data-theme/, /data-mode/] },
  });
  const sizes = [];
  for (const result of results) {
    const before = fs.statSync(result.file).size;
    fs.writeFileSync(result.file, result.css);
    sizes.push({ file: result.file, before, after: Buffer.byteLength(result.css) });
  }
  process.stdout.write(JSON.stringify(sizes));
});
