"""The generator parameter registry: read from the builders, and the one source of the CLI and run-config tables."""
import inspect

import pytest

from mst_dist.generators import GENERATORS, Param, generate, parameters, shared_parameters


@pytest.mark.parametrize("kind", sorted(GENERATORS))
def test_parameters_follow_the_builder_signature(kind):
    sig = inspect.signature(GENERATORS[kind]).parameters
    params = parameters(kind)
    assert [p.name for p in params] == list(sig)
    for p in params:
        assert isinstance(p, Param)
        default = sig[p.name].default
        assert p.required == (default is inspect.Parameter.empty)
        assert p.default == (None if p.required else default)
        assert p.shared == (sig[p.name].kind is inspect.Parameter.KEYWORD_ONLY)
        assert p.type in ("int", "float", "number", "str")
        assert p.help and "``" not in p.help and ":func:" not in p.help, (kind, p)


def test_shared_parameters_are_the_weight_options():
    assert [p for p in parameters("rmat") if p.shared] == list(shared_parameters())
    for kind in GENERATORS:
        shared = [(p.name, p.type, p.default, p.choices) for p in parameters(kind) if p.shared]
        assert shared == [("seed", "int", 0, None), ("weights", "str", "int", ("int", "float")),
                          ("wmin", "number", 1, None), ("wmax", "number", 1000, None)], kind


def test_types_and_help_from_annotations_and_docs():
    rmat = {p.name: p for p in parameters("rmat")}
    assert (rmat["scale"].type, rmat["scale"].required) == ("int", True)
    assert (rmat["a"].type, rmat["a"].default) == ("float", 0.57)
    assert rmat["a"].help == rmat["b"].help == rmat["c"].help  # one entry, three names
    assert "a + b + c <= 1" in rmat["a"].help
    assert rmat["edge_factor"].help.startswith("Edges per vertex")
    ssca = {p.name: p for p in parameters("ssca2")}
    assert ssca["max_clique"].nullable and ssca["max_clique"].type == "int"
    assert not ssca["inter"].nullable
    # "As in erdos_renyi" is resolved to erdos_renyi's own descriptions
    grid_seed = next(p for p in parameters("grid") if p.name == "seed")
    assert grid_seed.help == next(p for p in parameters("erdos_renyi") if p.name == "seed").help
    assert "seed" in grid_seed.help


def test_unknown_kind_lists_the_choices():
    with pytest.raises(ValueError, match="unknown graph kind 'nope'; choose one of: caveman"):
        parameters("nope")
    with pytest.raises(ValueError, match="unknown graph kind"):
        generate("nope", n=3)


def test_generate_checks_names_against_the_registry():
    with pytest.raises(ValueError, match=r"grid: unknown parameter\(s\) n; expected rows, cols"):
        generate("grid", rows=2, cols=2, n=4)
    with pytest.raises(ValueError, match=r"grid: missing parameter\(s\) cols"):
        generate("grid", rows=2)


def test_a_parameter_name_has_one_type_across_families():
    types = {}
    for kind in GENERATORS:
        for p in parameters(kind):
            types.setdefault(p.name, set()).add(p.type)
    assert {name: t for name, t in types.items() if len(t) > 1} == {}


def test_command_line_flags_come_from_the_registry():
    from mst_dist.cli.parser import build_parser, generator_params

    parser = build_parser()
    names = {p.name for kind in GENERATORS for p in parameters(kind)}
    argv = ["generate", "rmat", "-o", "g.parquet"]
    for name in sorted(names):
        argv += ["--" + name.replace("_", "-"), "int" if name == "weights" else "3"]
    got = generator_params(parser.parse_args(argv))
    assert set(got) == names
    assert got["a"] == 3.0 and isinstance(got["a"], float)       # rmat's a: a float
    assert got["scale"] == 3 and isinstance(got["scale"], int)
    assert got["wmin"] == 3 and isinstance(got["wmin"], int)     # int or float, kept as given
    assert got["weights"] == "int"
