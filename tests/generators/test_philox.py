"""The counter-based draws of the generators, held to their definition in plain Python.

The references below compute each value from the Philox4x32-10 function
(itself checked against the published known-answer vectors) with Python
integers: the quadrant thresholds, Lemire's bounded draws with rejection and
the float weights are restated, not imported, so the kernels are tested
against an independent statement of the graphs they generate.
"""
import numba
import numpy as np
import pytest

from mst_dist.generators import BLOCK, generate
from mst_dist.generators import families, philox

# ---------------------------------------------------------------- Philox itself

# Random123's kat_vectors (Salmon et al., SC 2011): counter, key, output
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter,key,want", KAT)
def test_philox_known_answers(counter, key, want):
    got = philox.philox4x32(np.array([counter], np.uint32), np.uint32(key[0]), np.uint32(key[1]))
    assert tuple(int(x) for x in got[0]) == want


def _words(e, draw, stream, key):
    """Philox words of edges ``e`` (int array) for one draw and stream: an ``(len(e), 4)`` list of ints."""
    e = np.asarray(e, np.int64)
    c = np.stack([e & 0xFFFFFFFF, e >> 32, np.full_like(e, draw), np.full_like(e, stream)], 1)
    return philox.philox4x32(c.astype(np.uint32), *key).astype(np.int64).tolist()


# ---------------------------------------------------------------- the definitions, restated

def _lemire(draw_words, span):
    """Lemire's bounded draw on [0, span) with rejection; ``draw_words(attempt)`` gives the 4 words."""
    attempt = 0
    while True:
        w = draw_words(attempt)
        if span <= 1 << 32:
            p, bits = w[0] * span, 32
        else:
            p, bits = (w[0] | w[1] << 32) * span, 64
        if p % (1 << bits) >= (1 << bits) % span:
            return p >> bits
        attempt += 1


def ref_weights(start, stop, seed, tag, weights, wmin, wmax):
    key = philox.key_of(seed, tag)
    e = list(range(start, stop))
    first = _words(e, 0, philox.WEIGHT, key)
    out = []
    for i, ei in enumerate(e):
        if weights == "float":
            x = first[i][0] | first[i][1] << 32
            u = (x >> 11) * 2.0 ** -53
            top = float(np.nextafter(wmax, wmin)) if wmax > wmin else wmax
            out.append(min(u * (wmax - wmin) + wmin, top))
            continue
        span = wmax - wmin + 1
        if span == 1 << 64:
            v = first[i][0] | first[i][1] << 32
        else:
            v = _lemire(lambda a: first[i] if a == 0 else _words([ei], a, philox.WEIGHT, key)[0], span)
        out.append(wmin + v)
    return np.array(out, np.int64 if weights == "int" else np.float64)


def ref_pairs(start, stop, n, seed, tag, ordered):
    key = philox.key_of(seed, tag)
    s, d = [], []
    for ei in range(start, stop):
        def words(a, ei=ei):
            return _words([ei], a, philox.STRUCTURE, key)[0]
        attempt = 0
        while True:   # both draws from one attempt, both accepted
            w = words(attempt)
            if n <= 1 << 32:
                xu, xv, bits = w[0], w[1], 32
            else:
                xu, xv, bits = w[0] | w[1] << 32, w[2] | w[3] << 32, 64
            pu, pv = xu * n, xv * (n - 1)
            lim = 1 << bits
            if pu % lim >= lim % n and pv % lim >= lim % (n - 1):
                break
            attempt += 1
        u, r = pu >> bits, pv >> bits
        v = (u + 1 + r) % n
        s.append(min(u, v) if ordered else u)
        d.append(max(u, v) if ordered else v)
    return np.array(s, np.int64), np.array(d, np.int64)


def ref_rmat_raw(start, stop, scale, a, b, c, seed, tag):
    """Unscrambled R-MAT ids: level L of edge e from word L % 4 of counter (e, L // 4, STRUCTURE)."""
    key = philox.key_of(seed, tag)
    e = list(range(start, stop))
    t = [round(x * 2.0 ** 32) for x in (a, a + b, a + b + c)]
    u, v = [0] * len(e), [0] * len(e)
    for g in range((scale + 3) // 4):
        w = _words(e, g, philox.STRUCTURE, key)
        for level in range(4 * g, min(scale, 4 * g + 4)):
            for i in range(len(e)):
                x = w[i][level % 4]
                q = (x >= t[0]) + (x >= t[1]) + (x >= t[2])
                u[i] = 2 * u[i] + (q >= 2)
                v[i] = 2 * v[i] + (q % 2)
    return np.array(u, np.uint64), np.array(v, np.uint64)


def ref_rmat(start, stop, *, m, scale, a, b, c, mults, adds, shift, seed, tag, weights, wmin, wmax):
    u, v = ref_rmat_raw(start, stop, scale, a, b, c, seed, tag)
    return (families._scramble(u, scale, mults, adds, shift), families._scramble(v, scale, mults, adds, shift),
            ref_weights(start, stop, seed, tag, weights, wmin, wmax))


def _assert_rows(got, want):
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("params, ranges", [
    (dict(scale=7, edge_factor=8, weights="float", wmin=0.5, wmax=2.0, seed=3), [(0, 1024), (13, 777)]),
    (dict(scale=1, edge_factor=3), [(0, 6), (1, 5)]),
    (dict(scale=10, edge_factor=4, a=0.45, b=0.15, c=0.15, seed=5), [(1000, 2100)]),
    (dict(scale=40, edge_factor=1, seed=2), [((1 << 40) - 700, (1 << 40) - 1)]),   # two 32-level passes
    (dict(scale=35, edge_factor=1, a=0.6, b=0.2, c=0.2), [(5, 400)]),             # d = 0: tabc unreachable
    (dict(scale=6, edge_factor=4, a=1.0, b=0.0, c=0.0, seed=1), [(0, 256)]),       # every edge (x, x)
])
def test_rmat_rows_follow_the_definition(params, ranges):
    p = generate("rmat", **params).sources[0].params
    for start, stop in ranges:
        _assert_rows(families._rmat_rows(start, stop, **p), ref_rmat(start, stop, **p))


@pytest.mark.parametrize("kind,n", [("erdos_renyi", 50), ("gnp", 100), ("erdos_renyi", (1 << 31) + 1),
                                    ("erdos_renyi", (1 << 40) + 3), ("erdos_renyi", 2)])
def test_pairs_follow_the_definition(kind, n):
    """Uniform pairs, 32-bit draws (one with half its draws refused) and 64-bit ones."""
    params = dict(n=n, m=3000) if kind == "erdos_renyi" else dict(n=n, p=0.5)
    p = generate(kind, seed=4, **params).sources[0].params
    s, d, _ = families._erdos_renyi_rows(100, 1500, **p) if kind == "erdos_renyi" else \
        families._gnp_rows(100, 1500, **p)
    rs, rd = ref_pairs(100, 1500, n, 4, p["tag"], kind == "gnp")
    np.testing.assert_array_equal(s, rs)
    np.testing.assert_array_equal(d, rd)


@pytest.mark.parametrize("weights,wmin,wmax", [
    ("int", 1, 1000), ("int", -2, 3), ("int", 7, 7),
    ("int", 0, 1 << 31),                    # 32-bit draws, about half refused
    ("int", -(1 << 62), 1 << 62),           # 64-bit draws, about half refused
    ("int", -(1 << 63), (1 << 63) - 1),     # the whole of int64: no bound
    ("float", 0.5, 2.0), ("float", -1.0, -1.0),
])
def test_weights_follow_the_definition(weights, wmin, wmax):
    g = generate("circulant", n=2000, d=2, seed=9, weights=weights, wmin=wmin, wmax=wmax)
    got = g.sources[0].load(1500, 3900)[2]
    _assert_rows((got,), (ref_weights(1500, 3900, 9, g.sources[0].params["tag"], weights, wmin, wmax),))
    assert got.min() >= wmin and (got.max() <= wmax if weights == "int" else got.max() < wmax or wmin == wmax)


# ---------------------------------------------------------------- reproducible anywhere

@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="Numba has one thread here")
@pytest.mark.parametrize("kind,params", [("rmat", dict(scale=15, edge_factor=8)),
                                         ("erdos_renyi", dict(n=1000, m=300_000)),
                                         ("grid", dict(rows=300, cols=400))])
def test_rows_the_same_on_one_or_two_threads_and_any_split(kind, params):
    src = generate(kind, seed=21, weights="float", **params).sources[0]
    m = src.n_edges
    assert m >= 2 * philox.MIN_PART   # two threads get a part each
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = src.load(0, m)
        numba.set_num_threads(2)
        two = src.load(0, m)
    finally:
        numba.set_num_threads(before)
    _assert_rows(one, two)
    cuts = [0, 1, philox.TILE - 1, philox.TILE + 5, m // 2, m // 2 + 3 * philox.TILE + 7, m]
    parts = [src.load(a, b) for a, b in zip(cuts[:-1], cuts[1:])]
    _assert_rows(one, tuple(np.concatenate([p[i] for p in parts]) for i in range(3)))


def test_a_block_is_a_function_of_seed_and_block_alone():
    """Edge i of block b is the same whether the graph has b + 1 blocks or more, loaded alone or not."""
    small = generate("rmat", scale=16, edge_factor=17, seed=3).sources[0]   # 17 * 2**16 > BLOCK
    large = generate("erdos_renyi", n=1 << 16, m=3 * BLOCK, seed=3).sources[0]
    for src in (small, large):
        block1 = src.load(BLOCK, BLOCK + 5000)
        again = src.load(BLOCK + 2000, BLOCK + 5000)
        _assert_rows(tuple(x[2000:] for x in block1), again)
    p = dict(large.params, m=2 * BLOCK)
    _assert_rows(families._erdos_renyi_rows(BLOCK, BLOCK + 5000, **p), large.load(BLOCK, BLOCK + 5000))


# ---------------------------------------------------------------- distributions

def _chi2_ok(counts, expected):
    """Pearson's statistic within 6 standard deviations of its mean (a false alarm: about 1e-9)."""
    k = counts.size
    stat = float(((counts - expected) ** 2 / expected).sum())
    return stat < (k - 1) + 6 * (2 * (k - 1)) ** 0.5, stat


@pytest.mark.parametrize("a,b,c", [(0.57, 0.19, 0.19), (0.45, 0.15, 0.15), (0.25, 0.25, 0.25)])
def test_rmat_levels_pick_quadrants_with_their_probabilities(a, b, c):
    """Each level's quadrant, read from the unscrambled ids: frequencies a, b, c, d at every level."""
    scale, m = 8, 1 << 16
    s = np.empty(m, np.int64)
    d = np.empty(m, np.int64)
    k0, k1 = philox.key_of(5, 8)
    ident = np.array([1], np.uint64), np.array([0], np.uint64)
    philox.rmat_edges(np.int64(0), k0, k1, np.int64(scale), *philox.rmat_thresholds(a, b, c),
                      *ident, np.int64(scale), s, d)   # multiply by 1, add 0, shift out: ids unscrambled
    probs = np.array([a, b, c, 1 - a - b - c])
    for level in range(scale):
        q = 2 * ((s >> level) & 1) + ((d >> level) & 1)
        ok, stat = _chi2_ok(np.bincount(q, minlength=4), m * probs)
        assert ok, (level, stat)


def test_rmat_degrees_follow_the_quadrant_probabilities():
    """A source id with k one-bits has expected degree m (a + b)**(scale - k) (c + d)**k: R-MAT's skew."""
    scale, m, a, b, c = 10, 1 << 19, 0.57, 0.19, 0.19
    s = np.empty(m, np.int64)
    d = np.empty(m, np.int64)
    k0, k1 = philox.key_of(2, 8)
    philox.rmat_edges(np.int64(0), k0, k1, np.int64(scale), *philox.rmat_thresholds(a, b, c),
                      np.array([1], np.uint64), np.array([0], np.uint64), np.int64(scale), s, d)
    deg = np.bincount(s, minlength=1 << scale)
    ones = np.array([bin(i).count("1") for i in range(1 << scale)])
    top, bottom = a + b, 1 - a - b   # a level's probability of a 0 bit, of a 1 bit, in the source id
    for k in range(scale + 1):
        want = m * top ** (scale - k) * bottom ** k
        got = deg[ones == k].mean()
        sd = (want / (ones == k).sum()) ** 0.5   # Poisson-like spread of a group mean
        assert abs(got - want) < 6 * sd + 1e-9, (k, got, want)
    assert deg[0] > 50 * deg.mean()   # vertex 0 (all levels in the top half) is the hub


def test_erdos_renyi_endpoints_are_uniform():
    n, m = 97, 200_000
    s, d, _ = generate("erdos_renyi", n=n, m=m, seed=8).to_arrays()
    assert not np.any(s == d)
    for x, k in ((s, n), (d, n), ((d - s - 1) % n, n - 1)):
        ok, stat = _chi2_ok(np.bincount(x, minlength=k)[:k], np.full(k, m / k))
        assert ok, stat


def test_weights_are_uniform():
    w = generate("erdos_renyi", n=10, m=100_000, seed=1, wmin=-3, wmax=46).to_arrays()[2]
    ok, stat = _chi2_ok(np.bincount(w + 3, minlength=50), np.full(50, 2000.0))
    assert ok, stat
    f = generate("erdos_renyi", n=10, m=100_000, seed=1, weights="float", wmin=2.0, wmax=4.0).to_arrays()[2]
    ok, stat = _chi2_ok(np.histogram(f, bins=40, range=(2.0, 4.0))[0], np.full(40, 2500.0))
    assert ok, stat


def test_rows_loaded_from_several_threads_at_once():
    """Dask workers load ranges from several threads at once: each range is the one loaded alone."""
    from concurrent.futures import ThreadPoolExecutor

    src = generate("rmat", scale=12, edge_factor=16, seed=3).sources[0]
    full = src.load(0, src.n_edges)
    cuts = np.linspace(0, src.n_edges, 17).astype(int)
    with ThreadPoolExecutor(4) as pool:
        parts = list(pool.map(lambda ab: src.load(*ab), zip(cuts[:-1], cuts[1:])))
    _assert_rows(full, tuple(np.concatenate([p[i] for p in parts]) for i in range(3)))
