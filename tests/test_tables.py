"""companion.tables: results shown as tables, sources as short links."""
import pytest

from companion import configs, tables


def test_a_table_is_a_markdown_pipe_table_and_aligned_text():
    table = tables.Table(["model", "$r$", "base"], [("Llama 2 7B", 128, "10,000"), ("a|b", 64, "1")])
    markdown = table._repr_markdown_().splitlines()
    assert markdown[0] == "| model | $r$ | base |"
    assert markdown[1] == "| :--- | ---: | ---: |"  # text left, numbers right, numbers written as text too
    assert markdown[3] == "| a\\|b | 64 | 1 |"  # a bar in a cell does not split it
    text = str(table).splitlines()
    assert text[0].startswith("model") and set(text[1]) <= {"-", " "}
    assert text[2].endswith("10,000") and text[3].index("64") == text[2].index("128") + 1
    assert text[3].endswith("     1")  # right-aligned under 10,000


@pytest.mark.parametrize("cell, number", [
    (3, True), (2.5, True), ("10,000", True), ("1.2e-05", True), ("-0.13", True), ("+2.1303", True),
    ("\u22120.5", True), ("3.5%", True), ("2\u00d7", True), ("inf", True), ("\u2013", True), ("$10^4$", False),
    ("8\u201311", False), ("seed 0", False), ("llama3", False), (True, False), ("1,00", False)])
def test_numbers_written_as_text_are_numbers(cell, number):
    assert tables._reads_as_number(cell) is number
    column = tables.Table(["x"], [(cell,)]).align
    assert column == ("r" if number else "l")


def test_a_captioned_table_is_numbered_by_its_label():
    """With a caption, the Markdown carries the label in a comment (hidden by notebook
    front ends), the caption in italics above the table; the book numbers it
    (bookwork/sphinx/numbered_tables.py)."""
    table = tables.Table(["$s$", "worst"], [(8, "1.75"), (32, "2.55")], caption="NTK-aware's worst ratio.",
                         label="tab-06-worst")
    lines = table._repr_markdown_().splitlines()
    assert lines[:4] == ["<!-- companion.tables: tab-06-worst -->", "", "*NTK-aware's worst ratio.*", ""]
    assert lines[4] == "| $s$ | worst |" and lines[5] == "| ---: | ---: |"
    assert str(table).splitlines()[0] == "NTK-aware's worst ratio."
    unlabelled = tables.Table(["a"], [(1,)], caption="A  caption\nover two lines.")
    assert unlabelled.caption == "A caption over two lines."
    assert unlabelled._repr_markdown_().startswith("<!-- companion.tables:  -->\n\n*A caption over two lines.*")
    plain = tables.Table(["a"], [(1,)])._repr_markdown_()
    assert plain.startswith("| a |") and "<!--" not in plain


def test_a_table_refuses_what_it_cannot_show():
    with pytest.raises(ValueError, match="columns"):
        tables.Table([], [])
    with pytest.raises(ValueError, match=r"rows\[1\] has 1 cells; the table has 2 columns"):
        tables.Table(["a", "b"], [(1, 2), (3,)])
    with pytest.raises(ValueError, match="align"):
        tables.Table(["a", "b"], [(1, 2)], align="lx")
    with pytest.raises(ValueError, match="label must be 'tab-'"):
        tables.Table(["a"], [(1,)], caption="A table.", label="Table 1")
    with pytest.raises(ValueError, match="a labelled table needs a caption"):
        tables.Table(["a"], [(1,)], label="tab-00-a")
    with pytest.raises(ValueError, match="one paragraph with no"):
        tables.Table(["a"], [(1,)], caption="*emphasis* would end the italics")
    with pytest.raises(ValueError, match="one paragraph"):
        tables.Table(["a"], [(1,)], caption="One.\n\nTwo.")


def test_sources_become_short_links():
    link = configs.source_link("https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json")
    assert link == ("[meta-llama/Llama-2-7b-hf: config.json]"
                    "(https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json)")
    paper = configs.source_link("arXiv:2307.09288 (Touvron et al. 2023), table 1")
    assert paper == "[arXiv:2307.09288](https://arxiv.org/abs/2307.09288) (Touvron et al. 2023), table 1"
    code = configs.source_link("https://github.com/meta-llama/llama/blob/main/llama/model.py (theta = 10000.0)")
    assert code.startswith("[meta-llama/llama: llama/model.py](https://github.com/")
    assert code.endswith("(theta = 10000.0)")
    with pytest.raises(ValueError, match="source"):
        configs.source_link("")


def test_every_published_source_reads_as_links_not_addresses():
    """Held out: every source of every published configuration (including entries added
    later) becomes text in which no address is shown bare."""
    import re

    for entry in configs.PUBLISHED:
        text = configs.source_links(entry.sources)
        shown = re.sub(r"\]\([^)]+\)", "]", text)  # what a reader sees: the links' names
        assert "https://" not in shown, (entry.name, shown)
