"""Tests of the seeded, chunk-independent graph generators."""
import pickle

import numpy as np
import pytest

from mst_dist.generators import BLOCK, GENERATORS, generate
from mst_dist.generators import blocks, families, geometric, ssca
import mst_dist
from support import ROOT, needs
from support.oracle import assert_result, expected

# (kind, params, n, m): small instances of every family, sizes by the formulas
SMALL = [
    ("erdos_renyi", dict(n=50, m=300), 50, 300),
    ("gnp", dict(n=60, p=0.3), 60, None),
    ("circulant", dict(n=31, d=4), 31, 31 * 4),
    ("grid", dict(rows=7, cols=9), 63, 7 * 8 + 6 * 9),
    ("hypercube", dict(d=6), 64, 6 * 32),
    ("caveman", dict(g=5, k=6), 30, 5 * 15 + 5),
    ("connected_caveman", dict(g=5, k=6), 30, 5 * 15),
    ("rmat", dict(scale=7, edge_factor=8), 128, 8 * 128),
]
SMALL_IDS = [s[0] for s in SMALL]

# instances with m > BLOCK, so that splits cross a block boundary
LARGE = [
    ("circulant", dict(n=350_001, d=3)),
    ("erdos_renyi", dict(n=1000, m=BLOCK + 5000)),
    ("rmat", dict(scale=16, edge_factor=17)),
    ("gnp", dict(n=1600, p=0.85)),
    ("caveman", dict(g=1700, k=36)),
]


def edge_set(src, dst):
    return {frozenset((int(u), int(v))) for u, v in zip(src, dst)}


def degrees(g):
    s, d, _ = g.to_arrays()
    return np.bincount(s, minlength=g.n_vertices) + np.bincount(d, minlength=g.n_vertices)


def assert_rows_equal(a, b):
    for x, y in zip(a, b):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


def split_load(src, cuts):
    parts = [src.load(a, b) for a, b in zip(cuts[:-1], cuts[1:])]
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


# ---------------------------------------------------------------- shape and sizes

@pytest.mark.parametrize("kind,params,n,m", SMALL, ids=SMALL_IDS)
def test_sizes_ids_and_graph_fields(kind, params, n, m):
    g = generate(kind, seed=3, **params)
    assert g.n_vertices == n
    if m is not None:
        assert g.n_edges == m
    assert g.validated and g.name.startswith(kind + "(")
    assert g.meta["kind"] == kind and g.meta["n"] == n and g.meta["m"] == g.n_edges
    assert g.weight_dtype == np.dtype(np.int64)
    s, d, w = g.to_arrays()
    assert s.dtype == d.dtype == np.int64 and w.dtype == np.int64
    assert len(s) == len(d) == len(w) == g.n_edges
    assert s.min() >= 0 and d.min() >= 0 and max(s.max(), d.max()) < n
    if kind != "rmat":  # R-MAT keeps its (rare) self-loops
        assert not np.any(s == d)


@pytest.mark.parametrize("kind,params,n,m", SMALL, ids=SMALL_IDS)
def test_int_weights_in_range_with_ties(kind, params, n, m):
    g = generate(kind, seed=5, wmin=-2, wmax=3, **params)
    w = g.to_arrays()[2]
    assert w.dtype == np.int64
    assert w.min() >= -2 and w.max() <= 3
    assert set(np.unique(w).tolist()) == set(range(-2, 4))  # both ends reached: inclusive


@pytest.mark.parametrize("kind,params,n,m", SMALL, ids=SMALL_IDS)
def test_float_weights_in_range(kind, params, n, m):
    g = generate(kind, seed=5, weights="float", wmin=0.5, wmax=2.0, **params)
    assert g.weight_dtype == np.dtype(np.float64)
    w = g.to_arrays()[2]
    assert w.dtype == np.float64
    assert np.all(np.isfinite(w)) and w.min() >= 0.5 and w.max() < 2.0
    assert len(np.unique(w)) == len(w)


# ---------------------------------------------------------------- chunk independence

@pytest.mark.parametrize("kind,params,n,m", SMALL, ids=SMALL_IDS)
def test_chunk_independence_small(kind, params, n, m):
    g = generate(kind, seed=11, **params)
    src = g.sources[0]
    m = g.n_edges
    full = src.load(0, m)
    assert_rows_equal(full, split_load(src, [0, 7, m // 3, m // 3 + 1, m]))
    assert_rows_equal(full, split_load(src, list(range(0, m, 13)) + [m]))
    for p in (1, 3, 8):
        ranges = g.chunk_ranges(p)
        assert_rows_equal(full, split_load(src, [r[1] for r in ranges] + [m]))
    empty = src.load(5, 5)
    assert [len(a) for a in empty] == [0, 0, 0]
    assert [a.dtype for a in empty] == [a.dtype for a in full]


@pytest.mark.parametrize("kind,params", LARGE, ids=[x[0] for x in LARGE])
def test_chunk_independence_across_blocks(kind, params):
    g = generate(kind, seed=2, **params)
    src = g.sources[0]
    m = g.n_edges
    assert m > BLOCK + 1000
    full = src.load(0, m)
    assert_rows_equal(full, split_load(src, [0, 7, BLOCK - 1, BLOCK + 3, m]))
    a, b = BLOCK - 10, BLOCK + 10
    assert_rows_equal(tuple(x[a:b] for x in full), src.load(a, b))


def test_load_outside_range_raises():
    src = generate("circulant", n=10, d=2).sources[0]
    with pytest.raises(ValueError, match="outside"):
        src.load(0, 21)
    with pytest.raises(ValueError, match="outside"):
        src.load(5, 4)


def test_source_pickles():
    g = generate("rmat", scale=6, seed=9)
    src = pickle.loads(pickle.dumps(g.sources[0]))
    assert_rows_equal(src.load(0, g.n_edges), g.to_arrays())


# ---------------------------------------------------------------- seeds

@pytest.mark.parametrize("kind,params,n,m", SMALL, ids=SMALL_IDS)
@pytest.mark.parametrize("weights", ["int", "float"])
def test_seed_determines_graph(kind, params, n, m, weights):
    a = generate(kind, seed=7, weights=weights, **params).to_arrays()
    b = generate(kind, seed=7, weights=weights, **params).to_arrays()
    assert_rows_equal(a, b)
    c = generate(kind, seed=8, weights=weights, **params)
    cw = c.to_arrays()[2]
    assert len(cw) != len(a[2]) or not np.array_equal(cw, a[2])


@pytest.mark.parametrize("kind", ["erdos_renyi", "rmat", "gnp"])
def test_seed_changes_random_structure(kind):
    params = dict(SMALL[SMALL_IDS.index(kind)][1])
    a = generate(kind, seed=1, **params).to_arrays()
    b = generate(kind, seed=2, **params).to_arrays()
    assert len(a[0]) != len(b[0]) or not np.array_equal(a[0], b[0])


# ---------------------------------------------------------------- structure

def test_erdos_renyi_spread():
    g = generate("erdos_renyi", n=20, m=20_000, seed=4)
    s, d, _ = g.to_arrays()
    assert not np.any(s == d)
    counts = np.bincount(s, minlength=20) + np.bincount(d, minlength=20)
    assert counts.min() > 0.8 * 2000 and counts.max() < 1.2 * 2000


def test_gnp_pairs_ordered_and_count():
    n, p = 400, 0.1
    g = generate("gnp", n=n, p=p, seed=6)
    s, d, _ = g.to_arrays()
    assert np.all(s < d)
    pairs = n * (n - 1) // 2
    sd = (pairs * p * (1 - p)) ** 0.5
    assert abs(g.n_edges - pairs * p) < 6 * sd
    assert generate("gnp", n=n, p=0.0).n_edges == 0
    assert generate("gnp", n=n, p=1.0).n_edges == pairs
    assert generate("gnp", n=1, p=0.5).n_edges == 0


def test_circulant_structure():
    n, d = 23, 3
    g = generate("circulant", n=n, d=d)
    s, t, _ = g.to_arrays()
    assert np.all(degrees(g) == 2 * d)
    assert len(edge_set(s, t)) == n * d
    assert np.all(((t - s) % n >= 1) & ((t - s) % n <= d))


@pytest.mark.parametrize("rows,cols", [(7, 9), (1, 5), (5, 1), (1, 1), (2, 2)])
def test_grid_structure(rows, cols):
    g = generate("grid", rows=rows, cols=cols)
    s, d, _ = g.to_arrays()
    assert g.n_edges == rows * (cols - 1) + (rows - 1) * cols
    expected = set()
    for r in range(rows):
        for c in range(cols):
            if c + 1 < cols:
                expected.add(frozenset((r * cols + c, r * cols + c + 1)))
            if r + 1 < rows:
                expected.add(frozenset((r * cols + c, (r + 1) * cols + c)))
    assert edge_set(s, d) == expected and len(expected) == g.n_edges
    # horizontal edges first
    nh = rows * (cols - 1)
    assert np.all(d[:nh] - s[:nh] == 1) and np.all(d[nh:] - s[nh:] == cols)
    if rows >= 3 and cols >= 3:
        deg = degrees(g).reshape(rows, cols)
        assert deg[0, 0] == deg[0, -1] == deg[-1, 0] == deg[-1, -1] == 2
        assert np.all(deg[0, 1:-1] == 3) and np.all(deg[-1, 1:-1] == 3)
        assert np.all(deg[1:-1, 0] == 3) and np.all(deg[1:-1, -1] == 3)
        assert np.all(deg[1:-1, 1:-1] == 4)


@pytest.mark.parametrize("dim", [1, 2, 5, 10])
def test_hypercube_structure(dim):
    g = generate("hypercube", d=dim)
    s, d, _ = g.to_arrays()
    assert g.n_vertices == 2 ** dim and g.n_edges == dim * 2 ** (dim - 1)
    assert np.all(degrees(g) == dim)
    x = s ^ d
    assert np.all((x & (x - 1)) == 0) and np.all(x > 0)  # one bit apart
    assert np.all(s < d)
    assert len(edge_set(s, d)) == g.n_edges


@pytest.mark.parametrize("g_,k", [(5, 6), (1, 4), (2, 3), (3, 1), (4, 2), (20, 40)])
def test_caveman_structure(g_, k):
    g = generate("caveman", g=g_, k=k)
    s, d, _ = g.to_arrays()
    pairs = k * (k - 1) // 2
    ring = g_ if g_ > 2 else g_ - 1
    assert g.n_vertices == g_ * k and g.n_edges == g_ * pairs + ring
    ncl = g_ * pairs
    # clique edges first, clique-major, each clique complete
    clique_of = s[:ncl] // k
    assert np.all(clique_of == d[:ncl] // k)
    assert np.all(np.diff(clique_of) >= 0)
    for c in range(g_):
        got = edge_set(s[:ncl][clique_of == c], d[:ncl][clique_of == c])
        want = {frozenset((c * k + i, c * k + j)) for i in range(k) for j in range(i + 1, k)}
        assert got == want
    want_ring = [(i * k + k - 1, ((i + 1) % g_) * k) for i in range(ring)]
    assert list(zip(s[ncl:].tolist(), d[ncl:].tolist())) == want_ring


def test_caveman_benchmark_size():
    g = generate("caveman", g=20_000, k=40)
    assert (g.n_vertices, g.n_edges) == (800_000, 15_620_000)


@pytest.mark.parametrize("g_,k", [(1, 2), (1, 3), (1, 5), (2, 2), (2, 3), (3, 3), (4, 5), (7, 6)])
def test_connected_caveman_matches_networkx(g_, k):
    nx = needs.module("networkx", "pip install 'mst-dist[networkx]'")
    ref = nx.connected_caveman_graph(g_, k)
    g = generate("connected_caveman", g=g_, k=k)
    s, d, _ = g.to_arrays()
    assert g.n_vertices == ref.number_of_nodes()
    assert g.n_edges == ref.number_of_edges()
    assert edge_set(s, d) == {frozenset(e) for e in ref.edges()}


def test_rmat_scramble_is_a_bijection():
    for scale in (1, 2, 5, 12):
        for seed in (0, 1, 123):
            mults, adds, shift = families._scramble_keys(seed, scale)
            x = np.arange(2 ** scale, dtype=np.int64)
            y = families._scramble(x, scale, mults, adds, shift)
            assert np.array_equal(np.sort(y), x)
    mults, adds, shift = families._scramble_keys(0, 12)
    x = np.arange(2 ** 12, dtype=np.int64)
    assert not np.array_equal(families._scramble(x, 12, mults, adds, shift), x)


def test_rmat_is_skewed():
    g = generate("rmat", scale=12, edge_factor=16, seed=1)
    deg = degrees(g)
    assert deg.max() > 20 * deg.mean()
    assert np.sum(deg == 0) > 0  # R-MAT leaves many vertices isolated
    uniform = generate("rmat", scale=12, edge_factor=16, a=0.25, b=0.25, c=0.25, seed=1)
    assert degrees(uniform).max() < 4 * degrees(uniform).mean()


# ---------------------------------------------------------------- errors

def test_unknown_kind_lists_choices():
    with pytest.raises(ValueError) as info:
        generate("smallworld", n=10)
    for name in GENERATORS:
        assert name in str(info.value)


@pytest.mark.parametrize("kind,params,word", [
    ("circulant", dict(n=10), "missing"),
    ("circulant", dict(n=10, d=2, radius=3), "radius"),
    ("circulant", dict(n=10, d=5), "n must be > 2\\*d"),
    ("circulant", dict(n=10, d=0), "d must be >= 1"),
    ("circulant", dict(n=10.5, d=2), "n must be an integer"),
    ("circulant", dict(n="10", d=2), "n must be an integer"),
    ("circulant", dict(n=True, d=2), "n must be an integer"),
    ("erdos_renyi", dict(n=1, m=3), "n must be >= 2"),
    ("erdos_renyi", dict(n=10, m=-1), "m must be >= 0"),
    ("gnp", dict(n=10, p=1.5), "p must be <= 1"),
    ("gnp", dict(n=10, p=float("nan")), "p must be finite"),
    ("grid", dict(rows=0, cols=3), "rows must be >= 1"),
    ("hypercube", dict(d=0), "d must be >= 1"),
    ("caveman", dict(g=0, k=3), "g must be >= 1"),
    ("connected_caveman", dict(g=3, k=1), "k must be >= 2"),
    ("rmat", dict(scale=0), "scale must be >= 1"),
    ("rmat", dict(scale=5, a=0.6, b=0.3, c=0.3), "a \\+ b \\+ c"),
    ("rmat", dict(scale=5, edge_factor=0), "edge_factor must be >= 1"),
])
def test_bad_parameters_named(kind, params, word):
    with pytest.raises(ValueError, match=word):
        generate(kind, **params)


@pytest.mark.parametrize("opts,word", [
    (dict(seed=-1), "seed"),
    (dict(weights="double"), "weights"),
    (dict(wmin=5, wmax=2), "wmin must be <= wmax"),
    (dict(wmin=1.5), "wmin must be an integer"),
    (dict(weights="float", wmax=float("inf")), "wmax must be finite"),
])
def test_bad_weight_options(opts, word):
    with pytest.raises(ValueError, match=word):
        generate("grid", rows=3, cols=3, **opts)


def test_integral_float_parameters_accepted():
    g = generate("circulant", n=1e3, d=2.0)
    assert (g.n_vertices, g.n_edges) == (1000, 2000)


# ---------------------------------------------------------------- random geometric, SSCA#2-like

def _rgg_brute_force(n, radius, seed):
    """All points of generate('random_geometric', ...) rebuilt strip by strip, pairs by brute force."""
    S = max(1, int(1.0 / radius))
    tag = blocks.TAGS["random_geometric"]
    counts = blocks.global_rng(seed, tag).multinomial(n, np.full(S, 1.0 / S))
    pts = [geometric._rgg_points(seed, tag, r, counts[r], S) for r in range(S)]
    x = np.concatenate([p[0] for p in pts])
    y = np.concatenate([p[1] for p in pts])
    d2 = (x[:, None] - x[None, :]) ** 2 + (y[:, None] - y[None, :]) ** 2
    iu = np.triu_indices(n, 1)
    keep = d2[iu] <= radius * radius
    return {(int(a), int(b)) for a, b in zip(iu[0][keep], iu[1][keep])}, x, y


@pytest.mark.parametrize("n,radius", [(500, 0.1), (700, 0.045), (300, 0.5), (120, 1.2), (0, 0.3)])
def test_random_geometric_is_the_geometric_graph(n, radius):
    g = generate("random_geometric", n=n, radius=radius, seed=4)
    s, d, w = g.to_arrays()
    exp, x, y = _rgg_brute_force(n, radius, 4)
    assert g.n_vertices == n and g.n_edges == len(exp) == g.meta["m"]
    assert set(zip(s.tolist(), d.tolist())) == exp and len(set(zip(s.tolist(), d.tolist()))) == len(s)
    assert np.all(s < d) and w.dtype == np.int64 and (len(w) == 0 or (w.min() >= 1 and w.max() <= 1000))
    # vertices numbered strip by strip, by x within a strip
    S = g.meta["strips"]
    strip = np.minimum((y * S).astype(int), S - 1)
    assert np.all(np.diff(strip) >= 0)


def test_random_geometric_chunk_independence_and_seeds(client):
    g = generate("random_geometric", n=4000, radius=0.02, seed=9, weights="float")
    assert len(g.sources) >= 1
    full = g.to_arrays()
    for p in (1, 3, 8):
        parts = [g.sources[si].load(a, b) for si, a, b, _ in g.chunk_ranges(p)]
        assert_rows_equal(full, tuple(np.concatenate([x[k] for x in parts]) for k in range(3)))
    src = g.sources[0]
    assert_rows_equal(src.load(0, src.n_edges), split_load(src, [0, 1, 17, src.n_edges // 2, src.n_edges]))
    again = generate("random_geometric", n=4000, radius=0.02, seed=9, weights="float")
    assert_rows_equal(full, again.to_arrays())
    other = generate("random_geometric", n=4000, radius=0.02, seed=10, weights="float")
    assert other.n_edges != g.n_edges or not np.array_equal(other.to_arrays()[0], full[0])
    exp = expected(g)
    for p in (1, 3):  # the forest, not only its component count, whatever the chunks
        assert_result(mst_dist.minimum_spanning_forest(g, client, partitions=p, local_finish=0), exp)


@pytest.mark.parametrize("kind,params", [("gnp", dict(n=300, p=0.05)), ("ssca2", dict(n=3000, max_clique=9, inter=2)),
                                         ("random_geometric", dict(n=3000, radius=0.03))])
@pytest.mark.parametrize("stream", ["never", "always"])
def test_generated_families_solve_to_kruskal(client2, kind, params, stream):
    """Each generator's graph, loaded by the workers, resident and streamed: Kruskal's forest."""
    g = generate(kind, seed=12, **params)
    assert not g.in_memory
    assert_result(mst_dist.minimum_spanning_forest(g, client2, partitions=3, stream=stream, local_finish=0),
                  expected(g))


def test_random_geometric_many_sources():
    g = generate("random_geometric", n=60_000, radius=0.012, seed=1)
    assert len(g.sources) > 1 and g.n_edges == sum(s.n_edges for s in g.sources)
    s, d, _ = g.to_arrays()
    assert np.all(s < d) and s.max() < 60_000
    deg = np.bincount(s, minlength=60_000) + np.bincount(d, minlength=60_000)
    assert abs(deg.mean() - np.pi * 0.012 ** 2 * 60_000) < 2   # about pi r^2 n, less at the border


def _ssca_cliques(g):
    """Clique sizes of a generated ssca2 graph, block by block."""
    p = g.sources[0].params
    last = p["block_voff"].size - 2
    return np.concatenate([ssca._ssca_sizes(p["seed"], p["tag"], b, p["max_clique"], p["n"],
                                           int(p["block_voff"][b]), last)
                           for b in range(last + 1)])


@pytest.mark.parametrize("n,max_clique,inter", [(50, None, 1), (3000, 9, 2), (40_000, 6, 1), (7, 10, 1)])
def test_ssca2_structure(n, max_clique, inter):
    g = generate("ssca2", n=n, max_clique=max_clique, inter=inter, seed=3)
    s, d, w = g.to_arrays()
    sizes = _ssca_cliques(g)
    assert sizes.sum() == n and sizes.min() >= 1 and sizes.max() <= g.meta["max_clique"]
    clique = np.repeat(np.arange(sizes.size), sizes)
    n_inter = inter * n if sizes.size > 1 else 0
    assert g.n_edges == int((sizes * (sizes - 1) // 2).sum()) + n_inter == len(s)
    assert not np.any(s == d) and s.max(initial=0) < n and d.max(initial=0) < n
    same = clique[s] == clique[d]
    assert same.sum() == int((sizes * (sizes - 1) // 2).sum())       # the cliques are complete...
    pairs = {(int(a), int(b)) for a, b in zip(s[same], d[same])}
    assert len(pairs) == same.sum()                                    # ... without repeats
    assert (~same).sum() == n_inter
    if n_inter:
        assert np.array_equal(np.bincount(s[~same], minlength=n), np.full(n, inter))
        dist = np.abs(clique[s[~same]] - clique[d[~same]])
        dist = np.minimum(dist, sizes.size - dist)
        assert np.all((dist & (dist - 1)) == 0)                        # distances are powers of two
        assert np.mean(dist == 1) > 0.4


def test_ssca2_chunk_independence_across_blocks():
    g = generate("ssca2", n=60_000, max_clique=8, seed=6)
    src = g.sources[0]
    eoff = src.params["block_eoff"]
    assert eoff.size > 3
    full = src.load(0, g.n_edges)
    b = int(eoff[1])
    assert_rows_equal(full, split_load(src, [0, 5, b - 1, b + 1, int(eoff[2]) + 3, g.n_edges]))
    assert_rows_equal(full, generate("ssca2", n=60_000, max_clique=8, seed=6).to_arrays())


@pytest.mark.parametrize("kind,params,word", [
    ("random_geometric", dict(n=10, radius=0), "radius must be in"),
    ("random_geometric", dict(n=10, radius=2.0), "radius must be in"),
    ("random_geometric", dict(n=-1, radius=0.1), "n must be >= 0"),
    ("random_geometric", dict(n=10, radius=1e-9), "too small"),
    ("ssca2", dict(n=0), "n must be >= 1"),
    ("ssca2", dict(n=10, max_clique=0), "max_clique must be >= 1"),
    ("ssca2", dict(n=10, inter=-1), "inter must be >= 0"),
])
def test_new_families_bad_parameters(kind, params, word):
    with pytest.raises(ValueError, match=word):
        generate(kind, **params)


def test_bench_suite_config_builds():
    """benchmarks/configs/bench-suite.yaml: valid for the benchmark runner; every graph has the size it claims."""
    import inspect
    import os

    from benchmarks import load_config

    path = os.path.join(ROOT, "benchmarks", "configs", "bench-suite.yaml")
    cfg = load_config(path)
    sizes = {"circulant100m": 300_000_000, "conncaveman100": 49_950_000, "rmat22": 29_360_128,
             "random5m": 30_000_000, "ssca2-5m": 30_004_331, "grid2500": 12_495_000,
             "random1m-30m": 30_000_000}
    for g in cfg["graphs"]:
        params = dict(g["generate"])
        kind = params.pop("kind")
        if kind == "random_geometric":   # its edges are counted by a pass over 5M points: too slow here
            inspect.signature(GENERATORS[kind]).bind(**params)
            continue
        assert generate(kind, **params).n_edges == sizes[g["name"]], g["name"]


@pytest.mark.parametrize("kind,params,n,m", SMALL, ids=SMALL_IDS)
def test_streamed_forest_equals_kruskal(client, kind, params, n, m):
    """Each family streamed in passes (regenerated from its seeded blocks each pass): Kruskal's ids."""
    from support.naive import kruskal

    g = generate(kind, seed=3, **params)
    s, d, w = g.to_arrays()
    exp, comps = kruskal(g.n_vertices, s, d, w)
    res = mst_dist.minimum_spanning_forest(g, client, partitions=3, stream="always")
    assert res.stats.streamed
    np.testing.assert_array_equal(res.edge_ids, exp)
    np.testing.assert_array_equal(res.src, s[exp])
    assert res.n_components == comps
