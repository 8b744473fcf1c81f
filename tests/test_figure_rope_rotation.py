"""Figure 2 (RoPE on one pair): the data are right, and the page draws and responds."""
import importlib
import math

import numpy as np
import pytest

from companion import rope

# the module, not the function of the same name that companion.figures exports
fig = importlib.import_module("companion.figures.rope")


def test_data_match_companion():
    data = fig.rope_rotation_data(q=(0.95, 0.25), k=(0.55, 0.75), m=5, n=2, theta=0.4)
    q, k = np.array(data["q"]), np.array(data["k"])
    assert data["distances"] == list(range(-15, 16))
    assert abs(data["score"] - float(rope.score(q, k, 5, 2, [0.4]))) < 1e-6
    # the curve at m - n = d is the score of any positions with that difference
    for m, n in ((0, 0), (5, 2), (2, 5), (15, 0), (0, 15), (9, 4)):
        assert abs(data["curve"][m - n + 15] - float(rope.score(q, k, m, n, [0.4]))) < 1e-6
    assert data["curve"][3 + 15] == data["score"]
    # by hand: q . R_{(n - m) theta} k for one pair
    c, s = math.cos(-3 * 0.4), math.sin(-3 * 0.4)
    assert abs(data["score"] - (q[0] * (c * k[0] - s * k[1]) + q[1] * (s * k[0] + c * k[1]))) < 1e-6
    assert np.allclose(data["rotated_q"], rope.rotate(q, 5, [0.4]), atol=1e-6)
    # the curve is a cosine of amplitude |q||k|
    amp = np.hypot(*q) * np.hypot(*k)
    assert max(np.abs(data["curve"])) <= amp + 1e-6 and max(data["curve"]) > 0.9 * amp


def test_shifting_both_keeps_the_score():
    widget = fig.rope_rotation(m=13, n=10)
    start = widget.score
    seen = []
    for _ in range(6):
        widget.shift_both()
        seen.append((widget.m, widget.n))
        assert widget.m - widget.n == 3
        assert abs(widget.score - start) < 1e-9
    assert seen == [(14, 11), (15, 12), (3, 0), (4, 1), (5, 2), (6, 3)]
    assert fig.shifted(15, 0) == (15, 0)  # already spanning the whole line
    assert fig.shifted(4, 15) == (0, 11)


def test_widget_follows_python_changes():
    widget = fig.rope_rotation()
    widget.n = 7  # m - n = -2
    assert abs(widget.score - float(rope.score(widget.q, widget.k, 5, 7, [0.4]))) < 1e-6
    widget.q = [0.0, 1.2]
    assert abs(widget.score - float(rope.score([0.0, 1.2], widget.k, 5, 7, [0.4]))) < 1e-6
    assert np.allclose(widget.curve, rope.relative_score([0.0, 1.2], widget.k, np.arange(15, -16, -1), [0.4]), atol=1e-6)
    widget.theta = 0.25
    assert abs(widget.curve[15 + 5] - float(rope.score(widget.q, widget.k, 5, 0, [0.25]))) < 1e-6


def test_bad_input_and_description():
    w = fig.rope_rotation()
    assert (w.m, w.n, w.theta, w.max_position) == (5, 2, 0.4, 15)
    assert "theta = 0.4" in w.description and f"{w.score:.3f}" in w.description
    assert "m − n = 3" in w.description
    with pytest.raises(ValueError, match="theta"):
        fig.rope_rotation(theta=0)
    with pytest.raises(ValueError, match="m must"):
        fig.rope_rotation(m=16)
    with pytest.raises(ValueError, match="n must"):
        fig.rope_rotation(n=-1)
    with pytest.raises(ValueError, match="n must"):
        fig.rope_rotation(n=2.5)
    with pytest.raises(ValueError, match="q must"):
        fig.rope_rotation(q=(0.1, 0.0))  # too short
    with pytest.raises(ValueError, match="k must"):
        fig.rope_rotation(k=(1.0, 2.0, 3.0))
    with pytest.raises(ValueError, match="max_position"):
        fig.rope_rotation_data(max_position=0)
    with pytest.raises(Exception, match="m must"):
        w.m = 20
    with pytest.raises(Exception, match="k must"):
        w.k = [3.0, 0.0]
    assert w.fallback_html().startswith('<div class="companion-fallback" data-fallback-for="rope_rotation">')


@pytest.mark.site
def test_page_interaction(open_figure):
    page, root, problems = open_figure("rope_rotation")
    expected = fig.rope_rotation_data()
    plane = root.locator("svg.cf-plane")
    point = root.locator("circle.cf-score-point")

    def vector(name):
        arrow = root.locator(f"g.cf-arrow[data-arrow='{name}']")
        return np.array([float(arrow.get_attribute("data-x")), float(arrow.get_attribute("data-y"))])

    def angle(name):
        return float(root.locator(f"g.cf-arrow[data-arrow='{name}']").get_attribute("data-angle"))

    def state():
        m, n = int(plane.get_attribute("data-m")), int(plane.get_attribute("data-n"))
        assert root.locator("[data-marker='m']").get_attribute("aria-valuenow") == str(m)
        assert root.locator("[data-marker='n']").get_attribute("aria-valuenow") == str(n)
        return {
            "q": vector("q"), "k": vector("k"), "m": m, "n": n, "theta": float(plane.get_attribute("data-theta")),
            "score": float(point.get_attribute("data-score")), "x": float(point.get_attribute("data-x")),
            "y": float(point.get_attribute("data-y")),
            "cx": float(point.get_attribute("data-cx")), "cy": float(point.get_attribute("data-cy")),
        }

    def companion_score(st):
        return float(rope.score(st["q"], st["k"], st["m"], st["n"], [st["theta"]]))

    def turned(a, b, by):  # angle b is angle a turned by `by`, modulo a full turn
        return abs(math.remainder(b - a - by, 2 * math.pi)) < 1e-6

    # the starting state is Python's, and the drawn score is companion's
    st = state()
    assert np.allclose(st["q"], expected["q"]) and np.allclose(st["k"], expected["k"])
    assert (st["m"], st["n"], st["theta"]) == (expected["m"], expected["n"], expected["theta"])
    assert abs(st["score"] - companion_score(st)) < 1e-6
    assert abs(st["score"] - expected["score"]) < 1e-6 and st["x"] == 3 and st["y"] == st["score"]
    dots = root.locator("circle.cf-curve-dot")
    assert dots.count() == 31
    drawn_curve = [float(dots.nth(i).get_attribute("data-value")) for i in range(31)]
    assert np.allclose(drawn_curve, expected["curve"], atol=1e-5)
    assert turned(angle("q"), angle("q-rot"), st["m"] * st["theta"])
    assert turned(angle("k"), angle("k-rot"), st["n"] * st["theta"])
    assert "θ = 0.4 rad per position" in root.locator(".cf-theta").inner_text()

    # "Move both one later (+1)", past 15: positions change, the point and the score stay
    button = root.get_by_role("button", name=fig.SHIFT_LABEL)
    wrapped = False
    for _ in range(13):
        before = state()
        q_rot, k_rot = angle("q-rot"), angle("k-rot")
        button.click()
        after = state()
        assert after["m"] - after["n"] == before["m"] - before["n"] == 3
        assert (after["m"], after["n"]) != (before["m"], before["n"])
        assert abs(after["score"] - before["score"]) < 1e-9
        assert (after["cx"], after["cy"]) == (before["cx"], before["cy"])
        assert abs(after["score"] - companion_score(after)) < 1e-6
        if after["m"] == before["m"] + 1:  # both bold arrows turned by theta together
            assert turned(q_rot, angle("q-rot"), st["theta"]) and turned(k_rot, angle("k-rot"), st["theta"])
        else:  # one would have passed 15: both moved back so that the smaller is 0
            assert before["m"] == 15 and after["n"] == 0 and after["m"] == 3
            wrapped = True
    assert wrapped
    text = root.locator(".cf-description").inner_text()
    assert f"Score after rotation: {st['score']:.3f}" in text and "m − n = 3" in text and "m = 5, " in text

    # changing n (keyboard) moves the point along the curve to companion's value
    before = state()
    root.locator("[data-marker='n']").focus()
    page.keyboard.press("ArrowRight")
    after = state()
    assert (after["m"], after["n"]) == (before["m"], before["n"] + 1) and after["x"] == 2
    assert abs(after["score"] - companion_score(after)) < 1e-6
    assert abs(after["score"] - expected["curve"][2 + 15]) < 1e-5
    dot = dots.nth(2 + 15)
    assert abs(after["cx"] - float(dot.get_attribute("cx"))) < 1e-3
    assert abs(after["cy"] - float(dot.get_attribute("cy"))) < 1e-3
    assert after["cx"] < before["cx"]
    assert "m − n = 2" in root.locator(".cf-readout").inner_text()

    # dragging the tip of q: the new score is companion's for the new q
    handle = root.locator("circle.cf-handle[data-handle='q']")
    box = handle.bounding_box()
    x0, y0 = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x0 - 40, y0 - 60, steps=6)
    page.mouse.up()
    dragged = state()
    assert np.linalg.norm(dragged["q"] - before["q"]) > 0.2
    assert np.allclose(dragged["k"], before["k"]) and (dragged["m"], dragged["n"]) == (after["m"], after["n"])
    assert abs(dragged["score"] - companion_score(dragged)) < 1e-6
    assert abs(dragged["score"] - after["score"]) > 1e-3
    curve = rope.relative_score(dragged["q"], dragged["k"], -np.arange(-15, 16), [dragged["theta"]])
    assert np.allclose([float(dots.nth(i).get_attribute("data-value")) for i in range(31)], curve, atol=1e-9)
    assert turned(angle("q"), angle("q-rot"), dragged["m"] * dragged["theta"])

    # keyboard on the focused q handle: 5 degrees per left/right, 0.1 per up/down
    a0, len0 = angle("q"), np.linalg.norm(vector("q"))
    page.keyboard.press("ArrowLeft")
    assert abs(math.remainder(angle("q") - a0 - math.radians(5), 2 * math.pi)) < 1e-3  # q is kept to 4 decimals
    page.keyboard.press("ArrowUp")
    assert abs(np.linalg.norm(vector("q")) - min(1.5, len0 + 0.1)) < 1e-3
    final = state()
    assert abs(final["score"] - companion_score(final)) < 1e-6
    assert problems == {"outside": [], "console": [], "http": []}
