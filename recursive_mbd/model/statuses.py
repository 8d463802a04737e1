"""The statuses of the compiled kernels (``_kernels.layout.decode_status``) turned into the exceptions they stand
for, for a planar model or a ``Model3D``: the tree kernels', the spatial quaternion check's and the loop layer's.
They read only the model's names and index arrays, so every layer above the kernels can report through them."""

from .._kernels import layout as L
from .._kernels.spatial import layout as SL
from ..errors import ModelError, StateError


def raise_kernel_status(model, status, names, output, *, overflow_note, singular_example, kernel):
    """Turn a tree kernel's status into the exception it stands for, for a planar or a spatial model: a non-finite
    input (``names`` the kernel's inputs in status order), an overflow of ``output`` (``overflow_note`` ends the
    sentence), a singular joint (``singular_example``: how a model gets one), else a RuntimeError naming the
    ``kernel``."""
    kind, index = L.decode_status(status)
    if kind in (L.STATUS_NONFINITE_Q, L.STATUS_NONFINITE_QD, L.STATUS_NONFINITE_TAU):
        what = names[kind - L.STATUS_NONFINITE_Q]
        raise StateError(f"{what}[{index}] is not finite")
    if kind == L.STATUS_OVERFLOW:
        raise StateError(f"overflow: {output} (entry {index}) is not finite although {', '.join(names)} are: the "
                         f"inputs are too large for float64{overflow_note}")
    if kind == L.STATUS_SINGULAR:
        raise ModelError(
            f"body {model.body_names[index]!r} (index {index}): the articulated inertia of its joint is singular "
            f"(the body and its subtree have no mass or inertia that the joint can move, e.g. {singular_example})")
    raise RuntimeError(f"{kernel} failed with status {status} (kind {kind}, index {index})")


def raise_status(model, status, names=("q", "qd", "tau"), output="the result"):
    """Turn a planar kernel status into the exception it stands for (``output`` names the kernel's result)."""
    raise_kernel_status(model, status, names, output,
                        overflow_note=" (e.g. rates near 1e155, whose squares overflow)",
                        singular_example="a massless tip body or a point mass on its own hinge", kernel="kernel")


def raise_spatial_status(model, status, names, output="the result"):
    """Turn a spatial kernel status into the exception it stands for: a negative status is the quaternion of a body
    off unit norm, the others are the tree kernels' (``raise_kernel_status``)."""
    if status < 0:
        body = -status - 1
        k = int(model.body_int[body, SL.QIDX]) + (3 if model.body_int[body, SL.JTYPE] == SL.FREE else 0)
        raise StateError(f"{names[0]}[{k}:{k + 4}], the quaternion of body {model.names[body]!r} (index {body}), "
                         f"is not of unit norm (to {SL.QUATERNION_TOL:g}); normalise it")
    raise_kernel_status(model, status, names, output, overflow_note="",
                        singular_example="a point mass on a spherical joint at its centre, a massless tip body, or "
                                         "a gimbal lock: massless bodies between joints whose axes line up",
                        kernel="spatial kernel")


def raise_loop_status(model, status, rates):
    """Raise the StateError of a loop-layer status of a planar or spatial model (a distance loop whose points
    coincide, an overflowed multiplier solve; ``rates`` names the velocity, "qd" or "v"); other statuses return."""
    kind, index = L.decode_status(status)
    if kind == L.STATUS_LOOP_DEGENERATE and index >= L.LOOP_CHANGE_POINT:
        raise StateError("the loop equations lose rank: a singular position (change point) of the mechanism")
    if kind == L.STATUS_LOOP_DEGENERATE:
        raise StateError(f"loop {model.loop_names[index]!r} (index {index}): the two points of the distance loop "
                         "coincide, so its direction is undefined")
    if kind == L.STATUS_NONFINITE_STATE:
        raise StateError("the multiplier solve of the loops overflowed: J M^-1 J^T or its right-hand side is not "
                         f"finite at this state (q, {rates} or tau too large)")


def raise_planar_loop_status(model, status):
    """The exception of a status of a planar model's loop layer or tree kernels."""
    raise_loop_status(model, status, "qd")
    raise_status(model, status)


def raise_spatial_loop_status(model, status, names):
    """The exception of a status of a spatial model's loop layer or tree kernels (``names`` its inputs)."""
    if status > 0:
        raise_loop_status(model, status, "v")
    raise_spatial_status(model, status, names)
