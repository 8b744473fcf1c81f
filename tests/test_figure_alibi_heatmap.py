"""Figure 3 (ALiBi heatmap): the data are right, and the page draws and responds."""
import numpy as np
import pytest

from companion import alibi, attention
from companion.figures import alibi as fig


def test_data_match_companion():
    data = fig.alibi_heatmap_data(n_heads=8, n=24)
    assert data["slopes"] == [2.0**-k for k in range(1, 9)]
    weights = np.array(data["weights"], dtype=float)  # None -> nan above the diagonal
    scores = np.array(data["scores"], dtype=float)
    upper = ~attention.causal_mask(24)
    assert np.all(np.isnan(weights[:, upper])) and np.all(np.isnan(scores[:, upper]))
    assert np.allclose(np.nansum(weights, axis=-1), 1.0, atol=1e-4)
    # the weights are the softmax of the scores, whose distance part is ALiBi's bias
    for h in range(8):
        masked = np.where(upper, -np.inf, scores[h])
        assert np.allclose(np.nan_to_num(weights[h]), attention.softmax(masked), atol=1e-4)
    content = scores[0] - alibi.bias(8, 24)[0]
    for h in range(1, 8):  # the same content in every head: only the bias differs
        assert np.allclose((scores[h] - alibi.bias(8, 24)[h])[~upper], content[~upper], atol=1e-4)


def test_steep_heads_hug_the_diagonal_gentle_heads_spread():
    data = fig.alibi_heatmap_data()
    share = data["near_share"]
    assert share[0] > 0.5 and share[-1] < share[0]
    assert all(a >= b for a, b in zip(share, share[1:]))  # steeper head, nearer weight
    assert data["span90"][0] < data["span90"][-1]


def test_widget_traits_and_bad_input():
    w = fig.alibi_heatmap(head=3, view="scores")
    assert (w.head, w.view, len(w.slopes)) == (3, "scores", 8)
    assert "Head 1" in w.description and "%" in w.description
    with pytest.raises(ValueError, match="head"):
        fig.alibi_heatmap(head=8)
    with pytest.raises(ValueError, match="view"):
        fig.alibi_heatmap(view="colours")
    with pytest.raises(ValueError, match="n_heads"):
        fig.alibi_heatmap_data(n_heads=0)
    with pytest.raises(Exception, match="head"):
        w.head = 12
    assert w.fallback_html().startswith('<div class="companion-fallback" data-fallback-for="alibi_heatmap">')


@pytest.mark.site
def test_page_interaction(open_figure):
    page, root, problems = open_figure("alibi_heatmap")
    expected = fig.alibi_heatmap_data()
    cells = root.locator("rect.cf-cell")
    assert cells.count() == 24 * 25 // 2

    def drawn(i, j):
        return float(root.locator(f"rect.cf-cell[data-i='{i}'][data-j='{j}']").get_attribute("data-value"))

    def row(i):
        return [drawn(i, j) for j in range(i + 1)]

    # weights view of the steepest head: rows sum to 1, over half the weight within 2 tokens
    assert root.locator("fieldset:has(legend:text('View')) button[aria-pressed=true]").inner_text() == "weights"
    for i in (5, 23):
        assert abs(sum(row(i)) - 1) < 1e-3
    last = row(23)
    assert sum(last[-3:]) > 0.5
    assert abs(drawn(23, 10) - expected["weights"][0][23][10]) < 1e-9
    # the gentlest head spreads its weight
    root.locator("button[data-value='7']").click()
    assert sum(row(23)[-3:]) < 0.5
    assert abs(drawn(23, 10) - expected["weights"][7][23][10]) < 1e-9
    # scores view (keyboard): the drawn scores are companion's
    scores_button = root.locator("button[data-value='scores']")
    scores_button.focus()
    page.keyboard.press("Enter")
    assert abs(drawn(23, 10) - expected["scores"][7][23][10]) < 1e-9
    # reading a cell with the arrow keys
    root.locator("svg").focus()
    page.keyboard.press("ArrowLeft")
    assert "query 23, key 22 (distance 1)" in root.locator(".cf-readout").inner_text()
    assert "Head 8 of 8" in root.locator(".cf-description").inner_text()
    assert problems == {"outside": [], "console": [], "http": []}
