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
