"""From the workers' records to the rounds' statistics: wall time, overhead, the single-task solve."""
import pytest

import mst_dist
from mst_dist.engine import accounting
from mst_dist.engine.records import LocalRecord
from mst_dist.kernels.contract import SolveRound
from mst_dist.result import RoundStats


def dist(rnd, wall, kernel, mode="distributed"):
    return RoundStats(round=rnd, mode=mode, components_before=10, components_after=5, edges_before=20,
                      edges_after=10, forest_edges=5, phase_seconds={"map": kernel / 2, "contract": kernel / 2},
                      wall_seconds=wall)


def overheads(rounds):
    return [r.wall_seconds - sum(r.phase_seconds.values()) for r in rounds]


def test_a_round_submitted_ahead_takes_its_time_from_the_round_before():
    # round 1 ran 0.3 s of kernels in a 0.1 s window: 0.2 s of it fell in round 0's window
    rounds = [dist(0, 1.0, 0.5), dist(1, 0.1, 0.3), dist(2, 0.4, 0.1)]
    total = sum(r.wall_seconds for r in rounds)
    assert min(overheads(rounds)) < 0
    accounting.settle_overlaps(rounds)
    assert min(overheads(rounds)) >= 0
    assert [round(r.wall_seconds, 9) for r in rounds] == [0.8, 0.3, 0.4]
    assert sum(r.wall_seconds for r in rounds) == pytest.approx(total)


def test_an_overlap_moves_back_over_several_rounds():
    rounds = [dist(0, 1.0, 0.2), dist(1, 0.05, 0.1), dist(2, 0.05, 0.3)]
    total = sum(r.wall_seconds for r in rounds)
    accounting.settle_overlaps(rounds)
    assert min(overheads(rounds)) >= -1e-12
    assert sum(r.wall_seconds for r in rounds) == pytest.approx(total)
    assert rounds[2].wall_seconds == pytest.approx(0.3) and rounds[1].wall_seconds == pytest.approx(0.1)


def test_the_first_distributed_round_keeps_its_kernel_time_and_local_rounds_stay():
    local = dist(0, 0.5, 0.1, mode="local")
    rounds = [local, dist(1, 0.1, 0.4)]
    accounting.settle_overlaps(rounds)
    assert rounds[1].wall_seconds == pytest.approx(0.4)
    assert local.wall_seconds == 0.5  # a local round is not a distributed round's window


def test_local_rounds_charge_the_task_to_the_first_round():
    trace = [SolveRound(8, 4, 12, 6, 4, {"map": 0.1, "contract": 0.1}),
             SolveRound(4, 0, 6, 0, 3, {"map": 0.05, "contract": 0.05})]
    rec = LocalRecord(kind="cpu", prepare=0.2, solve=0.3, edges_in=12, finished_total=1, forest_edges=7,
                      trace=trace)
    out = accounting.local_rounds(3, rec, wall=1.0)
    assert [r.round for r in out] == [3, 4]
    assert out[0].wall_seconds == pytest.approx(1.0 - 0.2 - 0.3 + 0.2)
    assert out[1].wall_seconds == pytest.approx(0.1)
    assert min(overheads(out)) >= 0


@pytest.mark.slow
def test_no_round_of_a_run_shows_negative_overhead(client2):
    """Distributed rounds on two workers, each submitted ahead of its record."""
    g = mst_dist.generate("rmat", scale=13, seed=3)
    res = mst_dist.minimum_spanning_forest(g, client2, local_finish=0, partitions=4)
    assert sum(r.mode.startswith("distributed") for r in res.stats.rounds) > 2
    assert min(overheads(res.stats.rounds)) >= -1e-9
    assert res.stats.overhead_seconds >= 0
