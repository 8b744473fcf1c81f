"""companion.tables: results shown as tables, sources as short links."""
import pytest

from companion import configs, tables


def test_a_table_is_a_markdown_pipe_table_and_aligned_text():
    table = tables.Table(["model", "$r$", "base"], [("Llama 2 7B", 128, "10,000"), ("a|b", 64, "1")])
    markdown = table._repr_markdown_().splitlines()
    assert markdown[0] == "| model | $r$ | base |"
    assert markdown[1] == "| :--- | ---: | :--- |"  # text left, numbers right
    assert markdown[3] == "| a\\|b | 64 | 1 |"  # a bar in a cell does not split it
    text = str(table).splitlines()
    assert text[0].startswith("model") and set(text[1]) <= {"-", " "}
    assert text[2].endswith("10,000") and text[3].index("64") == text[2].index("128") + 1


def test_a_table_refuses_what_it_cannot_show():
    with pytest.raises(ValueError, match="columns"):
        tables.Table([], [])
    with pytest.raises(ValueError, match=r"rows\[1\] has 1 cells; the table has 2 columns"):
        tables.Table(["a", "b"], [(1, 2), (3,)])
    with pytest.raises(ValueError, match="align"):
        tables.Table(["a", "b"], [(1, 2)], align="lx")


def test_sources_become_short_links():
    link = configs.source_link("https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json")
    assert link == ("[meta-llama/Llama-2-7b-hf: config.json]"
                    "(https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json)")
    paper = configs.source_link("arXiv:2307.09288 (Touvron et al. 2023), table 1")
    assert paper == "[arXiv:2307.09288](https://arxiv.org/abs/2307.09288) (Touvron et al. 2023), table 1"
    code = configs.source_link("https://github.com/meta-llama/llama/blob/main/llama/model.py (theta = 10000.0)")
    assert code.startswith("[meta-llama/llama: llama/model.py](https://github.com/") and code.endswith("(theta = 10000.0)")
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
