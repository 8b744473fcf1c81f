"""Tests for companion.relative: Shaw et al. (2018), Transformer-XL (2019), T5 (2020)."""
import math

import numpy as np
import pytest
import torch

from companion import absolute, attention, relative, relative_torch

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


# --- distances ------------------------------------------------------------------------


def test_relative_positions_literal_with_cached_keys():
    n_q, n_k = 3, 5
    got = relative.relative_positions(n_q, n_k)
    for r in range(n_q):
        i = r + n_k - n_q
        for j in range(n_k):
            assert got[r, j] == j - i
    np.testing.assert_array_equal(relative.relative_positions(4), np.subtract.outer(np.arange(4), np.arange(4)).T)


def test_clipped_distances_literal():
    got = relative.clipped_distances(6, 6, 2)
    for i in range(6):
        for j in range(6):
            assert got[i, j] == max(-2, min(2, j - i))
    assert np.all(relative.clipped_distances(4, 4, 0) == 0)


# --- Shaw, Uszkoreit & Vaswani (2018) ---------------------------------------------------


def _shaw_reference(q, k, v, w_k, w_v, c, mask=None):
    """The formulas of the paper (section 3), literally, one pair at a time."""
    n_q, n_k, d = q.shape[0], k.shape[0], q.shape[1]
    off = n_k - n_q
    e = np.full((n_q, n_k), -np.inf)
    for r in range(n_q):
        for j in range(n_k):
            if mask is None or mask[r, j]:
                a = w_k[max(-c, min(c, j - (r + off))) + c]
                e[r, j] = q[r] @ (k[j] + a) / math.sqrt(d)
    alpha = np.exp(e - e.max(axis=1, keepdims=True))
    alpha /= alpha.sum(axis=1, keepdims=True)
    z = np.zeros((n_q, v.shape[1]))
    for r in range(n_q):
        for j in range(n_k):
            z[r] += alpha[r, j] * (v[j] + w_v[max(-c, min(c, j - (r + off))) + c])
    return z, alpha, e


def _shaw_inputs(seed=0, n_q=4, n_k=6, d=3, d_v=2, c=2):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n_q, d)), rng.normal(size=(n_k, d)), rng.normal(size=(n_k, d_v)),
            rng.normal(size=(2 * c + 1, d)), rng.normal(size=(2 * c + 1, d_v)), c)


def test_shaw_attention_matches_the_paper_pair_by_pair():
    q, k, v, w_k, w_v, c = _shaw_inputs()
    z_ref, alpha_ref, e_ref = _shaw_reference(q, k, v, w_k, w_v, c)
    np.testing.assert_allclose(relative.shaw_scores(q, k, w_k), e_ref, atol=1e-13)
    z, alpha = relative.shaw_attention(q, k, v, w_k, w_v)
    np.testing.assert_allclose(alpha, alpha_ref, atol=1e-13)
    np.testing.assert_allclose(z, z_ref, atol=1e-13)


def test_shaw_attention_with_causal_mask_and_heads():
    q, k, v, w_k, w_v, c = _shaw_inputs(seed=1, n_q=5, n_k=5)
    mask = attention.causal_mask(5)
    z_ref, alpha_ref, _ = _shaw_reference(q, k, v, w_k, w_v, c, mask)
    heads = np.stack([q, 2 * q])  # two heads sharing the tables
    z, alpha = relative.shaw_attention(heads, np.stack([k, k]), np.stack([v, v]), w_k, w_v, mask=mask)
    np.testing.assert_allclose(z[0], z_ref, atol=1e-13)
    np.testing.assert_allclose(alpha[0], alpha_ref, atol=1e-13)
    assert z.shape == (2, 5, 2)


def test_shaw_with_zero_tables_is_plain_attention():
    q, k, v, w_k, w_v, c = _shaw_inputs(seed=2)
    z, alpha = relative.shaw_attention(q, k, v, 0 * w_k, 0 * w_v)
    z_plain, alpha_plain = attention.scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(z, z_plain, atol=1e-14)
    np.testing.assert_allclose(alpha, alpha_plain, atol=1e-14)


def test_shaw_distances_beyond_the_clip_share_one_vector():
    # With zero content, a score depends only on the clipped distance.
    q = np.ones((1, 2))
    w_k = np.arange(10.0).reshape(5, 2)  # c = 2
    e = relative.shaw_scores(q, np.zeros((8, 2)), w_k)[0]  # query at position 7
    assert len(set(e[:6])) == 1  # distances -7..-2 all use w_{-2}
    assert len(set(e[5:])) == 3  # -2, -1, 0 differ


@pytest.mark.parametrize("device", DEVICES)
def test_shaw_module_agrees_with_numpy(device):
    layer = relative_torch.ShawRelativeAttention(d=3, max_distance=2, d_v=2)
    q, k, v, *_ = _shaw_inputs(seed=3)
    mask = attention.causal_mask(4, 6)
    z_ref, alpha_ref = relative.shaw_attention(
        q, k, v, layer.w_k.detach().double().numpy(), layer.w_v.detach().double().numpy(), mask=mask
    )
    layer = layer.to(device)
    for dtype, tol in ((torch.float64, 1e-12), (torch.float32, 1e-5)):
        t = [torch.as_tensor(a, dtype=dtype, device=device) for a in (q, k, v)]
        z, alpha = layer(*t, mask=torch.as_tensor(mask, device=device))
        assert z.device.type == device and z.dtype == dtype
        np.testing.assert_allclose(z.detach().cpu().double().numpy(), z_ref, atol=tol, rtol=0)
        np.testing.assert_allclose(alpha.detach().cpu().double().numpy(), alpha_ref, atol=tol, rtol=0)


# --- Transformer-XL (Dai et al. 2019) ----------------------------------------------------


def test_signed_sinusoid_literal_and_extends_the_absolute_one():
    t = np.array([-5, -1, 0, 3])
    got = relative.signed_sinusoid(t, 6)
    for row, dist in enumerate(t):
        for i in range(3):
            w = 10000.0 ** (-2 * i / 6)
            assert got[row, 2 * i] == pytest.approx(math.sin(w * dist), abs=1e-15)
            assert got[row, 2 * i + 1] == pytest.approx(math.cos(w * dist), abs=1e-15)
    np.testing.assert_array_equal(relative.signed_sinusoid(np.arange(7), 8), absolute.sinusoidal(np.arange(7), 8))


def _xl_inputs(seed=0, n_q=3, n_k=5, d_model=6, d_head=4):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n_q, d_model)), rng.normal(size=(n_k, d_model)),
            rng.normal(size=(d_model, d_head)), rng.normal(size=(d_model, d_head)),
            rng.normal(size=(d_model, d_head)), rng.normal(size=d_head), rng.normal(size=d_head))


def test_transformer_xl_four_terms_match_the_paper_pair_by_pair():
    e_q, e_k, w_q, w_ke, w_kr, u, v = _xl_inputs()
    n_q, n_k, d_model = e_q.shape[0], e_k.shape[0], e_q.shape[1]
    t = relative.transformer_xl_terms(e_q, e_k, w_q, w_ke, w_kr, u, v)
    for r in range(n_q):
        i = r + n_k - n_q
        for j in range(n_k):
            R = np.array([f(10000.0 ** (-2 * (c // 2) / d_model) * (i - j)) for c, f in
                          zip(range(d_model), [math.sin, math.cos] * (d_model // 2))])
            a = (w_q.T @ e_q[r]) @ (w_ke.T @ e_k[j])
            b = (w_q.T @ e_q[r]) @ (w_kr.T @ R)
            c = u @ (w_ke.T @ e_k[j])
            d = v @ (w_kr.T @ R)
            assert (t.a[r, j], t.b[r, j], t.c[r, j], t.d[r, j]) == pytest.approx((a, b, c, d), abs=1e-12)
            assert t.total[r, j] == pytest.approx(a + b + c + d, abs=1e-12)


def test_transformer_xl_position_terms_depend_only_on_distance():
    e_q, e_k, w_q, w_ke, w_kr, u, v = _xl_inputs(seed=1, n_q=4, n_k=7)
    t = relative.transformer_xl_terms(e_q, e_k, w_q, w_ke, w_kr, u, v)
    # (d) is a function of i - j alone: constant along every diagonal.
    for offset in range(-3, 7):
        assert np.ptp(np.diagonal(t.d, offset)) < 1e-12
    # (c) does not depend on the query at all.
    assert np.all(np.ptp(t.c, axis=0) < 1e-12)
    # Same query content at two positions: (b) moves with the distance only.
    e_q2 = np.tile(e_q[:1], (4, 1))
    b = relative.transformer_xl_terms(e_q2, e_k, w_q, w_ke, w_kr, u, v).b
    for offset in range(-3, 7):
        assert np.ptp(np.diagonal(b, offset)) < 1e-12


@pytest.mark.parametrize("device", DEVICES)
def test_transformer_xl_module_agrees_with_numpy(device):
    layer = relative_torch.TransformerXLScores(d_model=6, d_head=4, base=100.0)
    with torch.no_grad():
        layer.u.normal_()
        layer.v.normal_()
    e_q, e_k, *_ = _xl_inputs(seed=2)
    params = [p.detach().double().numpy() for p in (layer.w_q, layer.w_ke, layer.w_kr, layer.u, layer.v)]
    ref = relative.transformer_xl_terms(e_q, e_k, *params, base=100.0)
    layer = layer.to(device)
    for dtype, tol in ((torch.float64, 1e-12), (torch.float32, 1e-5)):
        got = layer(torch.as_tensor(e_q, dtype=dtype, device=device), torch.as_tensor(e_k, dtype=dtype, device=device))
        for g, r in zip(got, ref):
            assert g.device.type == device and g.dtype == dtype
            np.testing.assert_allclose(g.detach().cpu().double().numpy(), r, atol=tol, rtol=0)


# --- T5 (Raffel et al. 2020) --------------------------------------------------------------


def _t5_reference(relative_position, bidirectional, num_buckets, max_distance):
    """Literal scalar transcription of Mesh TensorFlow's _relative_position_bucket."""
    ret = 0
    n = -relative_position
    if bidirectional:
        num_buckets //= 2
        ret += num_buckets if n < 0 else 0
        n = abs(n)
    else:
        n = max(n, 0)
    max_exact = num_buckets // 2
    if n < max_exact:
        return ret + n
    val = max_exact + int(math.log(n / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact))
    return ret + min(val, num_buckets - 1)


def _t5_hf_float32(rp, bidirectional, num_buckets, max_distance):
    """Hugging Face's torch version, float32 logarithm included."""
    buckets = 0
    if bidirectional:
        num_buckets //= 2
        buckets += (rp > 0).to(torch.long) * num_buckets
        rp = torch.abs(rp)
    else:
        rp = -torch.min(rp, torch.zeros_like(rp))
    max_exact = num_buckets // 2
    large = max_exact + (
        torch.log(rp.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(rp < max_exact, rp, large)


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets, max_distance", [(32, 128), (64, 256), (16, 40), (8, 10)])
def test_t5_bucket_table_matches_literal_formula(bidirectional, num_buckets, max_distance):
    distances = np.arange(-300, 301)
    got = relative.t5_bucket(distances, bidirectional, num_buckets, max_distance)
    expected = [_t5_reference(int(r), bidirectional, num_buckets, max_distance) for r in distances]
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)
    hf = _t5_hf_float32(torch.arange(-300, 301), bidirectional, num_buckets, max_distance)
    np.testing.assert_array_equal(got, hf.numpy())


def test_t5_bucket_landmarks():
    b = relative.t5_bucket
    assert b(0) == 0
    past = np.arange(0, 301)
    np.testing.assert_array_equal(b(-past[:8]), past[:8])  # exact for small distances
    np.testing.assert_array_equal(b(past[1:8]), 16 + past[1:8])
    assert set(b(-past[128:]).tolist()) == {15}  # all of 128 and beyond: one bucket per direction
    assert set(b(past[128:]).tolist()) == {31}
    assert np.all(np.diff(b(-past)) >= 0) and np.all(np.diff(b(past[1:])) >= 0)  # monotone in |distance|
    assert b(-past).max() == 15 and b(past[1:]).min() == 17
    # Where each log-spaced bucket starts: n >= 8 * 2**(k/2), the closed form for (32, 128).
    starts = {8: 8, 9: 12, 10: 16, 11: 23, 12: 32, 13: 46, 14: 64, 15: 91}
    for bucket, first in starts.items():
        assert b(-first) == bucket and b(-(first - 1)) == bucket - 1
    # A decoder never looks ahead: future keys fall in bucket 0.
    np.testing.assert_array_equal(b(past, bidirectional=False)[:8], [0] * 8)
    np.testing.assert_array_equal(b(-past[:8], bidirectional=False), past[:8])


def test_t5_bias_is_a_table_lookup():
    rng = np.random.default_rng(0)
    table = rng.normal(size=(32, 3))
    got = relative.t5_bias(table, 4, 6)
    assert got.shape == (3, 4, 6)
    for h in range(3):
        for r in range(4):
            for j in range(6):
                assert got[h, r, j] == table[_t5_reference(j - (r + 2), True, 32, 128), h]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_module_agrees_with_numpy(device, bidirectional):
    layer = relative_torch.T5RelativeBias(n_heads=4, bidirectional=bidirectional)
    distances = np.arange(-300, 301)
    expected = relative.t5_bucket(distances, bidirectional)
    np.testing.assert_array_equal(layer.bucket(torch.as_tensor(distances)).numpy(), expected)
    ref = relative.t5_bias(layer.table.weight.detach().double().numpy(), 5, 9, bidirectional)
    layer = layer.to(device)
    got32 = layer(5, 9)
    assert got32.shape == (4, 5, 9) and got32.device.type == device
    np.testing.assert_allclose(got32.detach().cpu().numpy(), ref, atol=1e-5, rtol=0)
    got64 = layer.double()(5, 9)
    np.testing.assert_allclose(got64.detach().cpu().numpy(), ref, atol=1e-12, rtol=0)


def test_t5_module_builds_on_the_table_device():
    layer = relative_torch.T5RelativeBias(2).to("meta")
    assert layer(3, 4).device.type == "meta"


# --- bad input ---------------------------------------------------------------------------


def test_bad_sizes_and_clip_are_rejected():
    with pytest.raises(ValueError, match="n_keys must be >= n_queries"):
        relative.relative_positions(5, 3)
    with pytest.raises(ValueError, match="n_queries"):
        relative.relative_positions(0)
    for k in (-1, 1.5, True):
        with pytest.raises(ValueError, match="k must be an integer >= 0 \\(the clipping distance\\)"):
            relative.clipped_distances(3, 3, k)
    with pytest.raises(ValueError, match="max_distance"):
        relative_torch.ShawRelativeAttention(4, -1)


def test_shaw_rejects_mismatched_shapes():
    q, k, v, w_k, w_v, _ = _shaw_inputs()
    with pytest.raises(ValueError, match="q and k"):
        relative.shaw_scores(q, k[:, :2], w_k)
    with pytest.raises(ValueError, match="w_k must be"):
        relative.shaw_scores(q, k, w_k[:4])
    with pytest.raises(ValueError, match="w_v must"):
        relative.shaw_attention(q, k, v, w_k, w_v[:3])
    with pytest.raises(ValueError, match="v must"):
        relative.shaw_attention(q, k, v[:2], w_k, w_v)
    with pytest.raises(ValueError, match="mask"):
        relative.shaw_attention(q, k, v, w_k, w_v, mask=np.ones((4, 6)))
    layer = relative_torch.ShawRelativeAttention(3, 2, d_v=2)
    with pytest.raises(ValueError, match=r"q must have shape \(\.\.\., n, d\) with d = 3"):
        layer(torch.zeros(4, 2), torch.zeros(6, 3), torch.zeros(6, 2))


def test_transformer_xl_rejects_mismatched_shapes():
    e_q, e_k, w_q, w_ke, w_kr, u, v = _xl_inputs()
    with pytest.raises(ValueError, match="e_q and e_k"):
        relative.transformer_xl_terms(e_q, e_k[:, :4], w_q, w_ke, w_kr, u, v)
    with pytest.raises(ValueError, match="w_ke"):
        relative.transformer_xl_terms(e_q, e_k, w_q, w_ke[:5], w_kr, u, v)
    with pytest.raises(ValueError, match="w_kr must have an even"):
        relative.transformer_xl_terms(e_q, e_k, w_q, w_ke, w_kr[:5], u, v)
    with pytest.raises(ValueError, match="u and v must have the same d_head"):
        relative.transformer_xl_terms(e_q, e_k, w_q, w_ke, w_kr, u[:3], v)
    with pytest.raises(ValueError, match="n_keys must be >= n_queries"):
        relative.transformer_xl_terms(e_k, e_q, w_q, w_ke, w_kr, u, v)
    with pytest.raises(ValueError, match="d_model"):
        relative_torch.TransformerXLScores(5, 4)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"num_buckets": 31}, "num_buckets"),
        ({"num_buckets": 2}, "num_buckets"),
        ({"num_buckets": 1, "bidirectional": False}, "num_buckets"),
        ({"max_distance": 8}, "max_distance"),
        ({"max_distance": 0}, "max_distance"),
        ({"bidirectional": "yes"}, "bidirectional"),
    ],
)
def test_t5_rejects_bad_options(kwargs, name):
    with pytest.raises(ValueError, match=name):
        relative.t5_bucket(np.arange(3), **kwargs)
    with pytest.raises(ValueError, match=name):
        relative_torch.T5RelativeBias(2, **kwargs)


def test_t5_rejects_bad_input():
    with pytest.raises(ValueError, match="relative_position"):
        relative.t5_bucket(np.array([0.5]))
    with pytest.raises(ValueError, match="n_heads"):
        relative_torch.T5RelativeBias(0)
    with pytest.raises(ValueError, match="table"):
        relative.t5_bias(np.zeros(32), 2)


# --- cost of the three methods -------------------------------------------------------------


def _position_parameters_from_modules(method, n_layers, n_heads, d_head, clip, num_buckets, tied_uv):
    """Count the position parameters of the companion torch layers, one per layer (and head)."""
    d_model = n_heads * d_head
    if method == "shaw":
        layers = [relative_torch.ShawRelativeAttention(d_head, clip) for _ in range(n_layers)]
        return sum(p.numel() for layer in layers for p in layer.parameters())
    if method == "transformer_xl":
        total = 0
        for layer in range(n_layers):
            for _ in range(n_heads):
                head = relative_torch.TransformerXLScores(d_model, d_head)
                total += head.w_kr.numel()
                if not tied_uv or layer == 0:
                    total += head.u.numel() + head.v.numel()
        return total
    shared = relative_torch.T5RelativeBias(n_heads, num_buckets=num_buckets)
    stack = torch.nn.ModuleList([shared] * n_layers)  # every layer uses the same table
    return sum(p.numel() for p in stack.parameters())


def _position_multiply_adds_by_counting(method, n_heads, d_head, n_q, n_k):
    """Walk over heads, pairs and vector components and count one per multiply-add."""
    count = 0
    d_model = n_heads * d_head
    if method == "transformer_xl":
        for _distance in range(n_k):  # W_{k,R} R_t for every distance, all heads at once
            count += sum(1 for _row in range(d_model) for _col in range(d_model))
    for _h in range(n_heads):
        if method == "transformer_xl":
            count += 2 * sum(1 for _key in range(n_k) for _c in range(d_head))  # (c) per key, (d) per distance
        for _i in range(n_q):
            for _j in range(n_k):
                if method == "shaw":
                    count += sum(1 for _c in range(d_head))  # q_i . a^K_ij
                    count += sum(1 for _c in range(d_head))  # alpha_ij a^V_ij
                elif method == "transformer_xl":
                    count += sum(1 for _c in range(d_head))  # term (b)
                else:
                    count += 1  # add the bias
    return count


@pytest.mark.parametrize("method", ["shaw", "transformer_xl", "t5"])
@pytest.mark.parametrize("n_layers, n_heads, d_head, n_q, n_k, clip, tied_uv", [
    (1, 1, 2, 1, 1, 0, False), (3, 2, 4, 5, 7, 2, False), (4, 3, 2, 4, 4, 3, True),
])
def test_position_cost_matches_modules_and_literal_counts(method, n_layers, n_heads, d_head, n_q, n_k, clip, tied_uv):
    got = relative.position_cost(method, n_layers, n_heads, d_head, n_q, n_k, clip=clip, num_buckets=8,
                                 tied_uv=tied_uv)
    assert isinstance(got, relative.PositionCost) and all(isinstance(x, int) for x in got)
    assert got.parameters == _position_parameters_from_modules(method, n_layers, n_heads, d_head, clip, 8, tied_uv)
    assert got.multiply_adds == _position_multiply_adds_by_counting(method, n_heads, d_head, n_q, n_k)
    assert got.content_multiply_adds == 2 * n_q * n_k * n_heads * d_head


def test_position_cost_base_configuration():
    # 12 layers, 12 heads of 64, 512 tokens: the numbers chapter 2 quotes.
    shaw, xl, t5 = (relative.position_cost(m, 12, 12, 64, 512) for m in ("shaw", "transformer_xl", "t5"))
    assert shaw.parameters == 12 * 2 * 33 * 64 == 50688
    assert xl.parameters == 12 * 768 * 768 + 12 * 2 * 768 == 7096320
    assert t5.parameters == 32 * 12 == 384
    assert shaw.multiply_adds == shaw.content_multiply_adds == 402653184
    assert t5.multiply_adds == 12 * 512 * 512
    tied = relative.position_cost("transformer_xl", 12, 12, 64, 512, tied_uv=True)
    assert xl.parameters - tied.parameters == 11 * 2 * 768


@pytest.mark.parametrize("kwargs, name", [
    ({"method": "rope"}, "method"),
    ({"n_layers": 0}, "n_layers"),
    ({"n_heads": 1.5}, "n_heads"),
    ({"d_head": True}, "d_head"),
    ({"n_queries": 4, "n_keys": 3}, "n_keys must be >= n_queries"),
    ({"clip": -1}, "clip"),
    ({"num_buckets": 1}, "num_buckets"),
    ({"tied_uv": "yes"}, "tied_uv"),
])
def test_position_cost_rejects_bad_input(kwargs, name):
    args = {"method": "shaw", "n_layers": 2, "n_heads": 2, "d_head": 4, "n_queries": 3} | kwargs
    with pytest.raises(ValueError, match=name):
        relative.position_cost(**args)


def _shaw_by_the_definition(q, k, v, w_k, w_v):
    """Shaw et al. (2018), one head, queries at the last positions, element by element."""
    n_q, n_k, d = q.shape[0], k.shape[0], q.shape[1]
    c = (w_k.shape[0] - 1) // 2
    e = np.empty((n_q, n_k))
    for r in range(n_q):
        i = r + n_k - n_q
        for j in range(n_k):
            e[r, j] = q[r] @ (k[j] + w_k[max(-c, min(c, j - i)) + c]) / math.sqrt(d)
    alpha = np.exp(e - e.max(axis=1, keepdims=True))
    alpha /= alpha.sum(axis=1, keepdims=True)
    z = np.zeros((n_q, v.shape[1]))
    for r in range(n_q):
        i = r + n_k - n_q
        for j in range(n_k):
            z[r] += alpha[r, j] * (v[j] + w_v[max(-c, min(c, j - i)) + c])
    return z, alpha


def test_shaw_attention_with_heads_and_more_keys_than_queries():
    rng = np.random.default_rng(11)
    heads, n_q, n_k, d, d_v, c = 3, 2, 6, 4, 5, 3
    q, k, v = rng.normal(size=(heads, n_q, d)), rng.normal(size=(heads, n_k, d)), rng.normal(size=(heads, n_k, d_v))
    w_k, w_v = rng.normal(size=(2 * c + 1, d)), rng.normal(size=(2 * c + 1, d_v))
    z, alpha = relative.shaw_attention(q, k, v, w_k, w_v)
    assert z.shape == (heads, n_q, d_v) and alpha.shape == (heads, n_q, n_k)
    for h in range(heads):
        z_ref, alpha_ref = _shaw_by_the_definition(q[h], k[h], v[h], w_k, w_v)
        assert np.allclose(alpha[h], alpha_ref, atol=1e-12) and np.allclose(z[h], z_ref, atol=1e-12)
    layer = relative_torch.ShawRelativeAttention(d, c, d_v).double()
    with torch.no_grad():
        layer.w_k.copy_(torch.from_numpy(w_k))
        layer.w_v.copy_(torch.from_numpy(w_v))
        z_t, alpha_t = layer(*(torch.from_numpy(a) for a in (q, k, v)))
    assert np.allclose(z_t.numpy(), z, atol=1e-12) and np.allclose(alpha_t.numpy(), alpha, atol=1e-12)


# --- rules and initial values that no other test reaches ----------------------------------


def test_fewer_keys_than_queries_are_refused_everywhere():
    q, k = np.zeros((4, 3)), np.zeros((3, 3))
    for call in (lambda: relative.shaw_scores(q, k, np.zeros((5, 3))),
                 lambda: relative.shaw_attention(q, k, np.zeros((3, 2)), np.zeros((5, 3)), np.zeros((5, 2))),
                 lambda: relative.transformer_xl_terms(q, k, np.zeros((3, 2)), np.zeros((3, 2)), np.zeros((4, 2)),
                                                       np.zeros(2), np.zeros(2))):
        with pytest.raises(ValueError, match=r"^n_keys must be >= n_queries \(4\)"):
            call()


def test_an_odd_sinusoid_width_is_refused_with_its_rows():
    with pytest.raises(ValueError, match=r"^w_kr must have an even number of rows d_r \(sinusoid pairs\), got 3$"):
        relative.transformer_xl_terms(np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((3, 2)), np.zeros((3, 2)),
                                      np.zeros((3, 2)), np.zeros(2), np.zeros(2))


@pytest.mark.parametrize("bidirectional, num_buckets, exact", [(True, 4, 1), (True, 6, 1), (True, 32, 8),
                                                                (False, 2, 1), (False, 5, 2), (False, 32, 16)])
def test_t5_accepts_the_smallest_options_and_max_distance_just_past_the_exact_buckets(bidirectional, num_buckets, exact):
    """T5 needs an even number >= 4 of buckets in both directions (>= 2 in one), and a max_distance beyond
    the exact buckets of a direction: half of a direction's buckets, ``(num_buckets // 2) // 2`` or
    ``num_buckets // 2`` (Raffel et al. 2020; Hugging Face's _relative_position_bucket)."""
    table = np.arange(num_buckets * 2.0).reshape(num_buckets, 2)
    for call in (lambda md: relative.t5_bucket(np.arange(-3, 4), bidirectional, num_buckets, md),
                 lambda md: relative.t5_bias(table, 2, 3, bidirectional, md),
                 lambda md: relative_torch.T5RelativeBias(2, num_buckets, md, bidirectional)):
        call(exact + 1)
        with pytest.raises(ValueError, match=rf"^max_distance must be > {exact} \(the number of exact buckets per "
                                             rf"direction\), got {exact}$"):
            call(exact)


def test_t5_bias_tables_of_one_head_and_of_an_odd_number_of_buckets():
    one_head = np.arange(32.0)[:, None]   # the last query, at position 2, sees keys at distances -2, -1, 0
    np.testing.assert_array_equal(relative.t5_bias(one_head, 1, 3)[0, 0], one_head[relative.t5_bucket([-2, -1, 0]), 0])
    with pytest.raises(ValueError, match="num_buckets must be an even integer >= 4 when bidirectional"):
        relative.t5_bias(np.zeros((5, 1)), 2, 3, bidirectional=True)
    np.testing.assert_array_equal(relative.t5_bias(np.arange(5.0)[:, None], 1, 2, bidirectional=False, max_distance=3),
                                  [[[1.0, 0.0]]])   # one key back: bucket 1; the query itself: 0


def test_t5_bias_uses_the_max_distance_it_is_given():
    table = np.arange(32.0)[:, None]
    for max_distance in (20, 128, 1000):
        got = relative.t5_bias(table, 1, 600, max_distance=max_distance)[0, 0]
        np.testing.assert_array_equal(got, table[relative.t5_bucket(np.arange(600) - 599, True, 32, max_distance), 0])


def test_t5_layer_with_keys_left_out_has_as_many_keys_as_queries():
    layer = relative_torch.T5RelativeBias(2)
    torch.testing.assert_close(layer(4), layer(4, 4), rtol=0, atol=0)


def test_shaw_layer_mask_broadcasts_over_the_leading_dimensions_of_q_and_k():
    """The scores have the broadcast leading shape of q and k: a mask of that shape is accepted, one of
    another shape refused; a mask with a row of no key is refused in so many words."""
    layer = relative_torch.ShawRelativeAttention(4, 1).double()
    q, k, v = torch.zeros(2, 1, 3, 4, dtype=torch.float64), torch.zeros(1, 5, 3, 4, dtype=torch.float64), \
        torch.zeros(1, 5, 3, 4, dtype=torch.float64)
    z, alpha = layer(q, k, v, mask=torch.ones(2, 5, 3, 3, dtype=torch.bool))
    assert z.shape == (2, 5, 3, 4) and alpha.shape == (2, 5, 3, 3)
    with pytest.raises(ValueError, match=r"^mask of shape \(3, 3, 3\) must broadcast to the scores \(2, 5, 3, 3\)$"):
        layer(q, k, v, mask=torch.ones(3, 3, 3, dtype=torch.bool))
    q3, k1 = torch.zeros(3, 2, 4, dtype=torch.float64), torch.zeros(1, 2, 4, dtype=torch.float64)
    assert layer(q3, k1, k1, mask=torch.ones(3, 2, 2, dtype=torch.bool))[0].shape == (3, 2, 4)
    assert layer(k1, q3, q3, mask=torch.ones(3, 2, 2, dtype=torch.bool))[0].shape == (3, 2, 4)
    mask = torch.ones(3, 3, dtype=torch.bool)
    mask[1] = False
    with pytest.raises(ValueError, match=r"^mask must leave every query a key to attend to; a row of mask is all False$"):
        layer(q[0, 0], k[0, 0], v[0, 0], mask=mask)


def test_shaw_layer_tables_start_as_the_paper_s_small_vectors():
    """w^K and w^V start as N(0, 0.02^2), as the layer's comment states (the BERT-style initialisation)."""
    torch.manual_seed(0)
    layer = relative_torch.ShawRelativeAttention(64, 256)
    for table in (layer.w_k, layer.w_v):
        assert table.detach().std().item() == pytest.approx(0.02, rel=0.03)
        assert abs(table.detach().mean().item()) < 0.001


def test_transformer_xl_layer_keeps_the_variance_of_unit_rows_and_starts_u_v_at_zero():
    """The projections start as N(0, 1/d_model) (LeCun's initialisation): a row of d_model unit-variance
    numbers projects to numbers of variance about 1; u and v start at 0."""
    torch.manual_seed(0)
    layer = relative_torch.TransformerXLScores(256, 64)
    e = torch.randn(512, 256)
    for w in (layer.w_q, layer.w_ke, layer.w_kr):
        assert (e @ w.detach()).var().item() == pytest.approx(1.0, rel=0.1)
    assert not layer.u.detach().any() and not layer.v.detach().any()
    assert repr(layer) == "TransformerXLScores(d_model=256, d_head=64, base=10000.0)"
