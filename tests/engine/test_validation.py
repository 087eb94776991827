"""Bad input raises ValueError naming the first offending edge, wherever it sits."""
import numpy as np
import pytest

import mst_dist
from mst_dist import InvalidGraphError


def arrays(m=1000):
    rng = np.random.default_rng(0)
    return rng.integers(0, 50, m), rng.integers(0, 50, m), rng.random(m)


@pytest.mark.parametrize("pos", [0, 517, 999])
@pytest.mark.parametrize("bad,match", [
    ("nan", "weight is NaN"),
    ("inf", "weight is infinite"),
    ("-inf", "weight is infinite"),
    ("neg-src", "negative vertex id"),
    ("neg-dst", "negative vertex id"),
    ("range", "vertex id out of range"),
])
def test_bad_edge_named(bad, match, pos):
    s, d, w = arrays()
    if bad in ("nan", "inf", "-inf"):
        w[pos] = float(bad)
    elif bad == "neg-src":
        s[pos] = -3
    elif bad == "neg-dst":
        d[pos] = -1
    else:
        d[pos] = 50
    with pytest.raises(ValueError, match=f"edge {pos} .*{match}") as ei:
        mst_dist.Graph.from_arrays(s, d, w, n_vertices=50)
    assert isinstance(ei.value, InvalidGraphError) and ei.value.edge == pos


def test_first_of_several_named():
    s, d, w = arrays()
    w[900] = np.nan
    s[400] = -1
    d[650] = 10**9
    with pytest.raises(ValueError, match=r"^edge 400 "):
        mst_dist.Graph.from_arrays(s, d, w, n_vertices=50)


def test_different_lengths():
    s, d, w = arrays()
    with pytest.raises(ValueError, match=r"different lengths.*edge 999 is incomplete"):
        mst_dist.Graph.from_arrays(s, d[:999], w)
    with pytest.raises(ValueError, match=r"different lengths.*edge 10 is incomplete"):
        mst_dist.Graph.from_arrays(s, d, w[:10])


@pytest.mark.parametrize("which,arr,match", [
    ("src", np.array([0.0, 1.0]), "src has dtype float64; vertex ids must be integers"),
    ("dst", np.array(["a", "b"]), "dst has dtype <U1; vertex ids must be integers"),
    ("w", np.array([1 + 2j, 3j]), "weight has dtype complex128"),
    ("w", np.array(["1", "2"], dtype=object), "weight has dtype object"),
])
def test_wrong_dtype(which, arr, match):
    s, d, w = np.array([0, 1]), np.array([1, 2]), np.array([1.0, 2.0])
    kw = dict(src=s, dst=d, weight=w)
    kw[{"src": "src", "dst": "dst", "w": "weight"}[which]] = arr
    with pytest.raises(ValueError, match=match):
        mst_dist.Graph.from_arrays(**kw)


def test_bad_n_vertices():
    with pytest.raises(ValueError, match="n_vertices must be a non-negative integer"):
        mst_dist.Graph.from_arrays([0], [1], [1.0], n_vertices=-2)


def test_int_weights_need_no_finite_check_and_huge_ids_rejected():
    g = mst_dist.Graph.from_arrays(np.array([0], np.uint64), np.array([1], np.uint64), np.array([2**63], np.uint64))
    assert g.n_vertices == 2
    with pytest.raises(ValueError, match="edge 1 .*out of range"):
        mst_dist.Graph.from_arrays(np.array([0, 2**64 - 1], np.uint64), np.array([1, 1], np.uint64), [1, 1])


def test_input_not_modified_on_error():
    s, d, w = arrays()
    w[3] = np.inf
    before = w.copy()
    with pytest.raises(ValueError):
        mst_dist.Graph.from_arrays(s, d, w)
    np.testing.assert_array_equal(w, before)


def test_not_a_graph():
    with pytest.raises(TypeError, match="Graph.from_arrays"):
        mst_dist.minimum_spanning_forest(([0], [1], [1]))
