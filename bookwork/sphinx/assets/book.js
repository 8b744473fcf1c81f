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
