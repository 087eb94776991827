"""Kernel options outside the contract: measured by the benchmarks, not used by the engine.

The single-task solve can cut parallel edges to the lightest of each pair
after a relabel (*dedupe*).  It changes how the forest is found, never
which forest, and on the graphs measured so far it does not pay, so the
contract's :meth:`~mst_dist.kernels.contract.Backend.solve_local` has no
such option; :func:`solve_local_dedupe` keeps it within reach of the
benchmarks (``kernels-loop-dedupe``) and of the tests that hold it to the
same forest.
"""
from __future__ import annotations

__all__ = ["solve_local_dedupe"]


def solve_local_dedupe(kern, chunk, n_comp, finished_offset=0, *, dedupe=2.0, relabel=None, light_factor=1.5,
                       min_degree=3.0, seed=0, on_round=None):
    """``kern.solve_local`` with parallel edges cut after each relabel that leaves more than ``dedupe``
    edges per component.

    Parameters
    ----------
    kern
        A backend (:func:`mst_dist.kernels.backend`).
    chunk, n_comp, finished_offset, relabel, light_factor, min_degree, seed, on_round
        As :meth:`mst_dist.kernels.contract.Backend.solve_local`.
    dedupe : float
        Edges per component above which parallel edges are cut; ``0``: never
        (the contract's solve).

    Returns
    -------
    mst_dist.kernels.contract.Solution
        The same forest as ``kern.solve_local``; the reference backend cuts
        nothing.
    """
    knobs = dict(relabel=relabel, light_factor=light_factor, min_degree=min_degree, seed=seed, on_round=on_round)
    if kern.name == "cpu":
        from mst_dist.kernels.cpu.solve import solve_local_dedupe as cpu_solve

        return cpu_solve(chunk, n_comp, finished_offset, dedupe=dedupe, **knobs)
    if kern.name == "gpu":
        from mst_dist.kernels.gpu.solve import solve_local as gpu_solve

        return gpu_solve(kern.adopt(chunk), n_comp, finished_offset, dedupe=dedupe, **knobs)
    if kern.name == "reference":
        return kern.solve_local(chunk, n_comp, finished_offset, **knobs)
    raise ValueError(f"solve_local_dedupe: no dedupe for the kernel backend {kern.name!r}")
