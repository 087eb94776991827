"""Validation of generator parameters, shared by every builder (client side).

Each check names the parameter it refuses and what is allowed, as a
``ValueError``; :func:`weight_spec` validates the options every family takes
(``seed``, ``weights``, ``wmin``, ``wmax``).
"""
from __future__ import annotations

import math
import numbers
from typing import Literal, Union

import numpy as np

__all__ = ["as_int", "as_float", "weight_spec", "check_size", "MAX_ID", "Weights", "Number"]

#: The type of the builders' ``weights`` option (its choices).
Weights = Literal["int", "float"]
#: The type of a parameter that is kept as given, integer or real (``wmin``, ``wmax``).
Number = Union[int, float]

MAX_ID = 1 << 62   # vertex and edge counts must stay well inside int64


def as_int(name, value, lo=None, hi=None):
    """Validate an integer parameter (integral floats accepted), naming it on error."""
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if isinstance(value, numbers.Integral):
        v = int(value)
    elif isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        v = int(value)
    else:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if lo is not None and v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")
    if hi is not None and v > hi:
        raise ValueError(f"{name} must be <= {hi}, got {v}")
    return v


def as_float(name, value, lo=None, hi=None):
    """Validate a finite real parameter, naming it on error."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if lo is not None and v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")
    if hi is not None and v > hi:
        raise ValueError(f"{name} must be <= {hi}, got {v}")
    return v


def weight_spec(seed, weights, wmin, wmax):
    """Validate seed and weight options; return ``(params, dtype)``."""
    seed = as_int("seed", seed, lo=0)
    if weights == "int":
        wmin = as_int("wmin", wmin, lo=-(1 << 63))
        wmax = as_int("wmax", wmax, hi=(1 << 63) - 1)
        dtype = np.dtype(np.int64)
    elif weights == "float":
        wmin = as_float("wmin", wmin)
        wmax = as_float("wmax", wmax)
        dtype = np.dtype(np.float64)
    else:
        raise ValueError(f"weights must be 'int' or 'float', got {weights!r}")
    if wmin > wmax:
        raise ValueError(f"wmin must be <= wmax, got wmin={wmin!r}, wmax={wmax!r}")
    return {"seed": seed, "weights": weights, "wmin": wmin, "wmax": wmax}, dtype


def check_size(kind, what, value):
    if value >= MAX_ID:
        raise ValueError(f"{kind}: {what}={value} is too large (limit 2**62)")
