"""The phase vocabulary: members equal, print and serialize as their names; every step belongs to a phase."""
import json
import pickle

from mst_dist.phases import ROUND_PHASES, ExchangeStage, Phase, Step, plain


def test_the_five_phases_of_a_round_in_order():
    assert ROUND_PHASES == ("map", "merge", "contract", "filter-edges", "filter-nodes")
    assert all(isinstance(p, Phase) for p in ROUND_PHASES)


def test_members_are_their_names():
    for member in (*Phase, *Step, *ExchangeStage):
        assert member == member.value and hash(member) == hash(member.value)
        assert f"{member}" == str(member) == "%s" % member == member.value
        assert pickle.loads(pickle.dumps(member)) is member
    assert json.dumps({Phase.FILTER_EDGES: [Step.HOOK]}) == '{"filter-edges": ["hook"]}'


def test_every_step_belongs_to_a_phase():
    assert all(isinstance(s.phase, Phase) for s in Step)
    assert {s.phase for s in Step} >= set(ROUND_PHASES)
    assert Step.HOOK.phase is Phase.CONTRACT and Step.PASS_RELABEL.phase is Phase.PASS


def test_plain_leaves_exact_strings_only():
    """What Dask's event log takes: exact ``str`` keys and values, however deep."""
    out = plain({"event": "round", Phase.MAP: 1.5, "nested": [{Step.MAP: (Phase.LOCAL, 2)}], "n": 3})
    assert out == {"event": "round", "map": 1.5, "nested": [{"map": ("local", 2)}], "n": 3}

    def exact(v):
        if isinstance(v, dict):
            return all(type(k) is str and exact(x) for k, x in v.items())
        if isinstance(v, (list, tuple)):
            return all(exact(x) for x in v)
        return not isinstance(v, str) or type(v) is str

    assert exact(out) and not exact({Phase.MAP: 1})
