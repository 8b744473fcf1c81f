// How the site's search ranks its results (Sphinx's html_search_scorer; the numbers are
// Sphinx's defaults except score()). A reader searching for a method wants the chapter
// that explains it and the glossary entry before the API entries of every function
// named after it: API pages are ranked a little lower, the glossary a little higher.
// Sphinx scores a page by its best-matching word alone, so for "rotary embedding" a
// chapter with "rotary" in one section title tied with the chapter whose titles hold
// both words; a page also gains for each word of the query in its titles.
function queryWordsInTitles(docname) {
  const index = typeof Search !== "undefined" ? Search._index : null;
  if (!index || typeof splitQuery === "undefined" || typeof Stemmer === "undefined") return 0;
  const query = new URLSearchParams(window.location.search).get("q") || "";
  const stemmer = new Stemmer();
  const file = index.docnames.indexOf(docname);
  let count = 0;
  for (const word of new Set(splitQuery(query.toLowerCase()))) {
    const files = index.titleterms[stemmer.stemWord(word)];
    if (files !== undefined && [].concat(files).includes(file)) count += 1;
  }
  return count;
}

var Scorer = {
  score: (result) => {
    const [docname, , , , score] = result;
    const inTitles = 3 * queryWordsInTitles(docname);
    if (docname.startsWith("book/api/") || docname === "py-modindex") return score - 8 + inTitles;
    if (docname === "book/glossary") return score + 8 + inTitles;
    return score + inTitles;
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
