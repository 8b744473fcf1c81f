// A formula in running text cannot break across lines; on a narrow screen one that
// is wider than its paragraph would drag the whole page sideways. Mark those (and only
// those, so that ordinary inline math keeps its baseline) to scroll inside their own box.
(function () {
  "use strict";
  function mark() {
    const article = document.querySelector(".bd-article");
    if (!article) return;
    const right = Math.min(article.getBoundingClientRect().right, document.documentElement.clientWidth);
    for (const math of article.querySelectorAll("span.math")) {
      math.classList.remove("math-wide");
      if (math.getBoundingClientRect().right > right + 1) math.classList.add("math-wide");
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mark);
  else mark();
  let pending = null;
  window.addEventListener("resize", () => { clearTimeout(pending); pending = setTimeout(mark, 150); });
})();

// A formula in running text is one unbreakable box, and a line may break between it and
// the punctuation after it, which then opens the next line (". Why does ..."): keep the
// mark that follows a formula on the formula's line.
(function () {
  "use strict";
  function glue() {
    for (const math of document.querySelectorAll(".bd-article span.math:not([data-glued])")) {
      math.dataset.glued = "1";
      if (math.classList.contains("math-wide")) continue;  // it scrolls in its own box
      const next = math.nextSibling;
      if (!next || next.nodeType !== Node.TEXT_NODE) continue;
      const mark = next.textContent.match(/^[.,;:!?)\u2019\u201d]+/);
      if (!mark) continue;
      const pair = document.createElement("span");
      pair.style.whiteSpace = "nowrap";
      math.replaceWith(pair);
      pair.append(math, mark[0]);
      next.textContent = next.textContent.slice(mark[0].length);
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", glue);
  else glue();
})();

// A formula, table or block of code wider than its box scrolls inside the box; mark the
// edges where there is more to see, so that the box fades out there (book.css).
(function () {
  "use strict";
  const SCROLLERS = ".bd-article div.math, .bd-article span.math.math-wide, .bd-article table, " +
    ".bd-article div[class*='highlight'] pre, .bd-article dl.py";
  function edges(box) {
    const more = box.scrollWidth - box.clientWidth > 1;
    box.classList.toggle("scroll-more-left", more && box.scrollLeft > 1);
    box.classList.toggle("scroll-more-right", more && box.scrollLeft + box.clientWidth < box.scrollWidth - 1);
  }
  function markAll() {
    for (const box of document.querySelectorAll(SCROLLERS)) {
      edges(box);
      if (!box.dataset.scrollWatched) {
        box.dataset.scrollWatched = "1";
        box.addEventListener("scroll", () => edges(box), { passive: true });
      }
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", markAll);
  else markAll();
  window.addEventListener("load", markAll);
  let pending = null;
  window.addEventListener("resize", () => { clearTimeout(pending); pending = setTimeout(markAll, 200); });
})();

// A square root in the site's math font leaves a gap after its radicand: the browser sizes
// the <msqrt> box for the widest radical sign the font has, and draws the one the radicand
// needs, which is narrower. Close the gap (measured, so a tall root that does use the wide
// sign keeps its width); again when a folded solution opens and shows more roots.
(function () {
  "use strict";
  function closeGaps() {
    for (const root of document.querySelectorAll(".bd-article msqrt:not([data-gap-closed])")) {
      const box = root.getBoundingClientRect();
      if (!box.width || !root.lastElementChild) continue;  // hidden: measured when shown
      const gap = box.right - root.lastElementChild.getBoundingClientRect().right;
      if (gap > 0.5) root.style.marginInlineEnd = `${-gap}px`;
      root.dataset.gapClosed = "1";
    }
  }
  const fonts = document.fonts ? document.fonts.ready : Promise.resolve();
  fonts.then(() => {
    closeGaps();
    document.addEventListener("click", () => setTimeout(closeGaps, 60));
  });
})();

// A long code name in a table (original_max_position_embeddings) keeps together, but may
// break after an underscore or a dot, as in print: kept whole it widened its column until
// the table's other columns were squeezed (chapter 6's methods, citations over four lines).
// The break points are <wbr> elements, so that a name copied from the page is the name.
(function () {
  "use strict";
  const LONG = 16;  // characters
  function breakable() {
    for (const code of document.querySelectorAll(".bd-article table code.literal")) {
      if (code.dataset.breaks || code.textContent.length <= LONG || !/[_.]/.test(code.textContent)) continue;
      code.dataset.breaks = "1";
      const texts = [];
      const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) texts.push(node);
      for (const node of texts) {
        const parts = node.textContent.split(/(?<=[_.])/);
        if (parts.length < 2) continue;
        const pieces = document.createDocumentFragment();
        parts.forEach((part, i) => {
          if (i) pieces.appendChild(document.createElement("wbr"));
          pieces.appendChild(document.createTextNode(part));
        });
        node.replaceWith(pieces);
      }
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", breakable);
  else breakable();
})();

// A table of two or three columns whose narrowest column a phone squeezes to a sliver (a
// module's name beside its description, broken over lines) is set as a list on a phone:
// each row a block, its cells one under the other (book.css). A column that is narrow
// because what it holds is short (N = 2, 4, 8 beside their results) is no sliver: such a
// table stays a table, its header naming its columns.
(function () {
  "use strict";
  const NARROWEST = 96;  // px
  function broken(cell) {  // whether the cell's text takes more than one line
    const tops = [];
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (!node.textContent.trim()) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      for (const rect of range.getClientRects()) {
        if (rect.width && !tops.some((top) => Math.abs(top - rect.top) < rect.height / 2)) tops.push(rect.top);
      }
    }
    return tops.length > 1;
  }
  function stack() {
    for (const table of document.querySelectorAll(".bd-article table")) {
      if (table.closest(".companion-figure")) continue;
      table.classList.remove("table-stacked");
      if (window.innerWidth >= 576) continue;
      const rows = [...table.querySelectorAll("tbody tr")];
      if (!rows.length || rows[0].children.length > 3) continue;
      const sliver = rows.some((row) => [...row.children].some(
        (cell) => cell.getBoundingClientRect().width < NARROWEST && broken(cell)));
      if (!sliver && table.scrollWidth <= table.clientWidth + 1) continue;
      table.classList.add("table-stacked");
      // the header is hidden in a list: in a table of three columns each cell after the
      // first says which column it is in ("Used in: chapter 3")
      const names = [...table.querySelectorAll("thead th")].map((th) => th.textContent.trim());
      if (names.length !== 3) continue;
      for (const row of rows) {
        [...row.children].forEach((cell, i) => { if (i > 0 && names[i]) cell.dataset.column = names[i]; });
      }
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", stack);
  else stack();
  let pending = null;
  window.addEventListener("resize", () => { clearTimeout(pending); pending = setTimeout(stack, 200); });
})();

// The theme button: every press shows the other theme. (The theme's own cycle goes from
// "light" to "auto" first, which on a light system changes nothing.) The other theme is
// "auto" where the system asks for it, so that the book then follows the system.
(function () {
  "use strict";
  const prefersDark = window.matchMedia("(prefers-color-scheme: dark)");
  function apply(mode) {
    const theme = mode === "auto" ? (prefersDark.matches ? "dark" : "light") : mode;
    document.documentElement.dataset.mode = mode;
    document.documentElement.dataset.theme = theme;
    for (const menu of document.querySelectorAll(".dropdown-menu")) {
      menu.classList.toggle("dropdown-menu-dark", theme === "dark");
    }
    localStorage.setItem("mode", mode);
    localStorage.setItem("theme", theme);
  }
  document.addEventListener("click", (event) => {
    if (!event.target.closest || !event.target.closest(".theme-switch-button")) return;
    event.stopPropagation();
    event.preventDefault();
    const shown = document.documentElement.dataset.theme === "dark" ? "dark" : "light";
    const other = shown === "dark" ? "light" : "dark";
    apply((prefersDark.matches ? "dark" : "light") === other ? "auto" : other);
  }, true);
})();
