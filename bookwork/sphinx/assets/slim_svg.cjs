// Slim the plots the book's notebooks drew (SVG written by Matplotlib) with SVGO (npm
// svgo, pinned in package.json): coordinates to three significant decimals and relative
// path commands, no metadata, no unused ids or empty groups. What is drawn is unchanged
// to well under a pixel; the files are about half the size.
//
// Called by bookwork/sphinx/offline/svg_plots.py: reads on stdin {"files": ["/abs/path.svg", ...]}
// rewrites each file in place and writes on stdout [{"file", "before", "after"}, ...].
"use strict";
const fs = require("fs");
const { optimize } = require("svgo");

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const sizes = [];
  for (const file of JSON.parse(input).files) {
    const before = fs.readFileSync(file, "utf8");
    const after = optimize(before, { path: file, multipass: true }).data;
    if (after.length < before.length) fs.writeFileSync(file, after);
    sizes.push({ file, before: Buffer.byteLength(before), after: Math.min(Buffer.byteLength(before), Buffer.byteLength(after)) });
  }
  process.stdout.write(JSON.stringify(sizes));
});
