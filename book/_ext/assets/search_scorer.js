// How the site's search ranks its results (Sphinx's html_search_scorer; the numbers are
// Sphinx's defaults except score()). A reader searching for a method wants the chapter
// that explains it and the glossary entry before the API entries of every function
// named after it: API pages are ranked a little lower, the glossary a little higher.
var Scorer = {
  score: (result) => {
    const [docname, , , , score] = result;
    if (docname.startsWith("book/api/") || docname === "py-modindex") return score - 8;
    if (docname === "book/glossary") return score + 8;
    return score;
  },
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};
