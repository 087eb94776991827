"""Compare-and-swap on array slots for the CPU kernels (Numba has no atomics on arrays of its own).

:func:`cas` is LLVM's ``cmpxchg`` on one element of an integer array,
emitted through :func:`numba.extending.intrinsic`: the way threads of one
``prange`` loop share one slot per component and keep the minimum in it
(the atomic minimum of ECL-MST, Fallin, Gonzalez, Seo and Burtscher, "A
High-Performance MST Implementation for GPUs", SC 2023, and of GBBS,
Dhulipala, Blelloch and Shun, "Theoretically Efficient Parallel Graph
Algorithms Can Be Fast and Scalable", SPAA 2018).
"""
from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["cas"]


@intrinsic
def cas(typingctx, arr, index, expected, desired):
    """``arr[index]``, replaced by ``desired`` if it was ``expected``, atomically: the value it held.

    The swap happened iff the value returned equals ``expected``.  Relaxed
    ordering (LLVM ``monotonic``): the kernels need the slot's own atomicity,
    not an order between slots (a ``prange`` loop ends with a barrier).
    """
    if not isinstance(arr, types.Array) or not isinstance(arr.dtype, types.Integer):
        return None
    sig = arr.dtype(arr, types.intp, arr.dtype, arr.dtype)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary, idx, old, new = args
        ary = context.make_array(aryty)(context, builder, ary)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [idx])
        pair = builder.cmpxchg(ptr, old, new, "monotonic", "monotonic")
        return builder.extract_value(pair, 0)

    return sig, codegen
