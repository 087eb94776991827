"""The generator families by name, and the one description of their parameters.

:data:`GENERATORS` maps each family's name to its builder; :func:`generate`
dispatches to it.  :func:`parameters` describes a family's parameters as
:class:`Param` records read from the builder itself: names, required or not
and defaults from its signature, types from its annotations, help text from
its numpydoc ``Parameters`` section.  The run-config schema and the command
line's generator flags are built from it, so a parameter is declared once, in
its builder.
"""
from __future__ import annotations

import inspect
import re
import typing
from dataclasses import dataclass
from functools import lru_cache

from mst_dist.generators.families import (
    caveman, circulant, connected_caveman, erdos_renyi, gnp, grid, hypercube, rmat,
)
from mst_dist.generators.geometric import random_geometric
from mst_dist.generators.ssca import ssca2
from mst_dist.graph import Graph

__all__ = ["GENERATORS", "generate", "Param", "parameters", "shared_parameters"]

#: The generator families: name -> builder.
GENERATORS = {
    "erdos_renyi": erdos_renyi,
    "gnp": gnp,
    "circulant": circulant,
    "grid": grid,
    "hypercube": hypercube,
    "caveman": caveman,
    "connected_caveman": connected_caveman,
    "rmat": rmat,
    "random_geometric": random_geometric,
    "ssca2": ssca2,
}


@dataclass(frozen=True)
class Param:
    """One parameter of a generator family.

    Attributes
    ----------
    name : str
        The builder's keyword.
    type : str
        ``"int"``, ``"float"``, ``"number"`` (an int or a float, kept as
        given) or ``"str"``.
    required : bool
        No default: the caller must give it.
    default : object
        The builder's default (``None`` when required).
    nullable : bool
        ``None`` is a value (the builder then picks one).
    choices : tuple or None
        The allowed values, when the type lists them.
    shared : bool
        A parameter every family takes (``seed``, ``weights``, ``wmin``,
        ``wmax``: keyword-only in the builders) rather than the family's own.
    help : str
        The builder's description of it, as plain text.
    """

    name: str
    type: str
    required: bool
    default: object
    nullable: bool
    choices: tuple | None
    shared: bool
    help: str


def parameters(kind):
    """The parameters of family ``kind``: its own (in signature order), then the shared ones.

    >>> [(p.name, p.type, p.required) for p in parameters("grid") if not p.shared]
    [('rows', 'int', True), ('cols', 'int', True)]
    >>> [p.name for p in parameters("grid") if p.shared]
    ['seed', 'weights', 'wmin', 'wmax']
    """
    return _parameters(_builder(kind))


def shared_parameters():
    """The parameters every family takes (``seed``, ``weights``, ``wmin``, ``wmax``).

    >>> [(p.name, p.default) for p in shared_parameters()]
    [('seed', 0), ('weights', 'int'), ('wmin', 1), ('wmax', 1000)]
    """
    return tuple(p for p in parameters(next(iter(GENERATORS))) if p.shared)


def _builder(kind):
    try:
        return GENERATORS[kind]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown graph kind {kind!r}; choose one of: {', '.join(sorted(GENERATORS))}"
        ) from None


@lru_cache(maxsize=None)
def _parameters(builder):
    sig = inspect.signature(builder)
    hints = typing.get_type_hints(builder)
    docs = _doc_params(builder)
    out = []
    for p in sig.parameters.values():
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            continue
        typ, nullable, choices = _kind_of(hints[p.name])
        required = p.default is inspect.Parameter.empty
        out.append(Param(name=p.name, type=typ, required=required,
                         default=None if required else p.default, nullable=nullable,
                         choices=choices, shared=p.kind == p.KEYWORD_ONLY,
                         help=docs.get(p.name, "")))
    return tuple(out)


def _kind_of(hint):
    """``(type name, nullable, choices)`` of an annotation."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) is typing.Literal:
        return "str", False, tuple(args)
    if args:  # a union
        nullable = type(None) in args
        rest = tuple(a for a in args if a is not type(None))
        if set(rest) == {int, float}:
            return "number", nullable, None
        (hint,) = rest
        typ, _, choices = _kind_of(hint)
        return typ, nullable, choices
    names = {int: "int", float: "float", str: "str"}
    if hint not in names:
        raise TypeError(f"generator parameters are int, float, str or unions of them, got {hint!r}")
    return names[hint], False, None


_SECTION = re.compile(r"^(\S.*)\n-+\s*$", re.M)
_SEE = re.compile(r"^As in :func:`(\w+)`\.?$")


def _doc_params(builder):
    """``{name: help}`` from the builder's numpydoc ``Parameters`` section, as plain text.

    An entry may name several parameters (``rows, cols : int``); one that
    reads "As in :func:`other`." takes ``other``'s descriptions.
    """
    doc = inspect.getdoc(builder) or ""
    heads = list(_SECTION.finditer(doc))
    body = ""
    for i, h in enumerate(heads):
        if h.group(1).strip() == "Parameters":
            end = heads[i + 1].start() if i + 1 < len(heads) else len(doc)
            body = doc[h.end():end]
            break
    out = {}
    names, text = None, []

    def flush():
        if names is None:
            return
        desc = " ".join(text)
        see = _SEE.match(desc)
        other = _doc_params(GENERATORS[see.group(1)]) if see else {}
        for n in names:
            out[n] = other.get(n, "") if see else _plain(desc)

    for line in body.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            flush()
            names = [n.strip() for n in line.split(":")[0].split(",")]
            text = []
        else:
            text.append(line.strip())
    flush()
    return out


def _plain(text):
    """Numpydoc markup as plain text: ````x```` and ``:func:`x``` become ``x``."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text)
    return text.replace("``", "")


def generate(kind: str, *, seed: int = 0, weights: str = "int", wmin=1, wmax=1000,
             **params) -> Graph:
    """Build a seeded synthetic graph of a named family, generated on the workers.

    Parameters
    ----------
    kind : str
        A key of :data:`GENERATORS`; :func:`parameters` lists the family's
        parameters (those of the builder of the same name).
    seed : int, optional
        Non-negative seed; the same seed and parameters give the same graph,
        however it is chunked.
    weights : {"int", "float"}, optional
        ``"int"``: int64 uniform on ``[wmin, wmax]`` (ties on purpose);
        ``"float"``: float64 uniform on ``[wmin, wmax)``.
    wmin, wmax : int or float, optional
        Weight range (default ``1 .. 1000``); ``wmin == wmax`` gives constant
        weights.
    **params
        The family's parameters, by name.

    Returns
    -------
    Graph
        A validated graph whose sources generate rows on demand.

    Raises
    ------
    ValueError
        Unknown family (the message lists the choices), missing or unknown
        parameter, or a parameter out of range (named in the message).

    Examples
    --------
    >>> from mst_dist.generators import generate
    >>> g = generate("grid", rows=3, cols=4, seed=1)
    >>> g.n_vertices, g.n_edges
    (12, 17)
    >>> src, dst, w = g.to_arrays()
    >>> src[:3].tolist(), dst[:3].tolist()
    ([0, 1, 2], [1, 2, 3])
    """
    builder = _builder(kind)
    own = [p for p in parameters(kind) if not p.shared]
    accepted = [p.name for p in own]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(
            f"{kind}: unknown parameter(s) {', '.join(unknown)}; expected {', '.join(accepted)}"
        )
    missing = [p.name for p in own if p.required and p.name not in params]
    if missing:
        raise ValueError(f"{kind}: missing parameter(s) {', '.join(missing)}")
    return builder(seed=seed, weights=weights, wmin=wmin, wmax=wmax, **params)
