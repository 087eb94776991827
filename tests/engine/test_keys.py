"""The task-key codec: every key the engine builds parses back to its parts, and its name to the phase enum."""
import ast
import pathlib

import dask
import pytest
from distributed.diagnostics.plugin import SchedulerPlugin

import mst_dist
from mst_dist.engine.keys import TaskKey, new_token, parse_key, task_key
from mst_dist.phases import ExchangeStage, Phase, Step
from support import ROOT

TOKEN = new_token()


@pytest.mark.parametrize("step,rnd,sub,index", [
    (Step.MAP, 0, 0, 3), (Step.MAP, 12, 7, 0), (Step.MERGE, 2, 1, "0.3"), (Step.MERGE, 2, None, "1.0"),
    (Step.CONTRACT, 5, 4, None), (Step.LOAD, 0, None, 17), (Step.LOCAL, 9, None, None),
    (Step.PASS_RELABEL, 1, None, 2),
])
def test_round_trip(step, rnd, sub, index):
    key = task_key(step, rnd, TOKEN, sub, index)
    k = parse_key(key)
    assert k == TaskKey(step, rnd, TOKEN, sub, None if index is None else str(index))
    assert str(k) == key


@pytest.mark.parametrize("step", list(Step))
def test_every_step_parses_back_to_its_member_and_phase(step):
    for stage in (None, *ExchangeStage):
        key = task_key(step, 3, TOKEN, 1, "2.0", stage)
        k = parse_key(key)
        assert k.step is step and k.stage is (None if stage is None else ExchangeStage(stage))
        assert k.phase is step.phase and isinstance(k.phase, Phase)
        assert k.name == (step.value if stage is None else f"{step.value}-{stage.value}")
        assert key == f"mst-{k.name}-r3-{TOKEN}-s1-2.0" and str(k) == key


def test_names_are_unambiguous():
    """No step's name reads as another step's exchange task: a key's name parses one way only."""
    names = {s.value for s in Step}
    assert not {f"{s.value}-{x.value}" for s in Step for x in ExchangeStage} & names


def test_strings_are_read_as_members_and_unknown_names_refused():
    assert task_key("hook", 1, TOKEN, stage="serve") == task_key(Step.HOOK, 1, TOKEN, stage=ExchangeStage.SERVE)
    with pytest.raises(ValueError):
        task_key("no-such-step", 0, TOKEN)
    with pytest.raises(ValueError):
        task_key(Step.HOOK, 0, TOKEN, stage="no-such-stage")
    assert parse_key(f"mst-no-such-step-r0-{TOKEN}") is None


def test_chunk_index_of_per_chunk_tasks_only():
    assert parse_key(task_key(Step.MAP, 1, TOKEN, 3, 5)).chunk == 5
    assert parse_key(task_key(Step.MERGE, 1, TOKEN, 3, "0.1")).chunk is None
    assert parse_key(task_key(Step.CONTRACT, 1, TOKEN, 3)).chunk is None


@pytest.mark.parametrize("key", ["other-key", "mst-", "mst-map-x0-abcd", ("mst-map-r0-ab", 1), None, 3])
def test_foreign_keys_are_none(key):
    assert parse_key(key) is None


def _key_calls(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name.endswith("key") or name in ("_exchange", "_count_edges", "_each_range"):
                yield node


def test_the_engine_names_its_tasks_by_the_enum():
    """No task is named by a string literal in the engine: every name is a :class:`Step` member."""
    literal = []
    for path in sorted((pathlib.Path(ROOT) / "mst_dist" / "engine").rglob("*.py")):
        for call in _key_calls(ast.parse(path.read_text())):
            args = [a for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            names = [a.value for a in args if a.value in {s.value for s in Step}]
            literal += [f"{path.name}:{call.lineno}: {n!r}" for n in names]
    assert not literal, "task names written as strings:\n" + "\n".join(literal)


class AllKeys(SchedulerPlugin):
    """Every key the scheduler sees."""

    name = "mst-test-all-keys"

    def __init__(self):
        self.keys = set()

    def transition(self, key, start, finish, *args, **kwargs):
        self.keys.add(key)


class Stop(BaseException):
    """Stands for the signal that ends a job (a progress callback's ``Exception`` does not stop a run)."""


def _stop_at_round(rnd):
    def progress(ev):
        if ev.get("phase") == Phase.MAP and ev.get("round") == rnd:
            raise Stop()
    return progress


def test_every_key_the_engine_makes_parses_back_to_a_step(client2, tmp_path):
    """The keys of runs of every kind (resident with a light split, streaming, partitioned with local
    contraction, spread streaming; checkpointed, stopped and resumed; outputs written or kept on the cluster)
    each parse to a
    :class:`Step` (and :class:`ExchangeStage`) member; the phases they name cover the five of a round."""
    g = mst_dist.generate("erdos_renyi", seed=5, n=600, m=3000)
    plugin = AllKeys()
    client2.register_plugin(plugin)
    try:
        run = lambda **kw: mst_dist.minimum_spanning_forest(g, client2, partitions=3, local_finish=0, **kw)
        run(gather=False)
        run(stream="always", output=str(tmp_path / "forest"), labels_output=str(tmp_path / "labels"))
        with dask.config.set({"mst.vertex-base": 0, "mst.vertex-ranges": 3, "mst.slice-edges": 2**10}):
            for stream in ("never", "always"):
                ck = str(tmp_path / f"ck-{stream}")
                with pytest.raises(Stop):
                    run(vertex_partition="always", stream=stream, checkpoint=ck, progress=_stop_at_round(2))
                run(vertex_partition="always", stream=stream, checkpoint=ck, gather=False)
        ck = str(tmp_path / "ck-resident")
        with pytest.raises(Stop):
            run(checkpoint=ck, progress=_stop_at_round(2))
        run(checkpoint=ck)
        keys = client2.run_on_scheduler(lambda dask_scheduler: sorted(
            map(str, dask_scheduler.plugins[AllKeys.name].keys)))
    finally:
        client2.unregister_scheduler_plugin(AllKeys.name)
    ours = [k for k in keys if k.startswith("mst-")]
    assert len(ours) > 500
    unparsed = [k for k in ours if parse_key(k) is None]
    assert not unparsed, f"keys naming no step: {unparsed[:20]}"
    parsed = [parse_key(k) for k in ours]
    phases = {k.phase for k in parsed}
    assert set(mst_dist.result.PHASES) - {Phase.FILTER_NODES} <= phases
    assert {Phase.FILTER_NODES, Phase.PASS, Phase.LOCAL_CONTRACTION, Phase.CHECKPOINT, Phase.RESUME,
            Phase.FINISH} <= phases
    assert {k.stage for k in parsed if k.stage is not None} == set(ExchangeStage)  # every stage, none left over
