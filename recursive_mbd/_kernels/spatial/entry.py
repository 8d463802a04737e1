"""The short path of a spatial forward-dynamics call from Python: one kernel compiled for exactly one signature.

numba's dispatch of a call from Python costs about 35 ns per argument (measured: 12 arrays 0.55 us, 8 arrays
0.41 us), so ``forward_dynamics_packed`` takes the workspace of ``spatial.forward_dynamics`` (ws, S, UD, uD, tmp)
as one float64 buffer (``spatial.Workspace3D.buffer``, its arrays being views of it) and makes the views again
inside: 8 arguments instead of 12. It is compiled for one signature with compilation disabled (``kernel()``): a
wrong dtype, layout or a read-only q, v, tau or out is a TypeError at dispatch (never a new specialisation), and
the lengths are checked here. The views have the types every other caller passes, so the one compiled
specialisation of ``spatial.forward_dynamics`` serves this path too.

Routes (``route``, ``kernel(route)``): a tree whose joints are all spherical or revolute takes
``forward_dynamics_rotary_packed`` (``rotary``: fewer operations, and a first call compiles that route only, not
the general kernel's passes for every joint type), any other tree ``forward_dynamics_packed``. The full route of
``dynamics.spatial.forward_dynamics`` calls the same compiled entry, so both give the same bits.
"""

import numba

from .. import cache as _cache  # noqa: F401  (first: numba caches these kernels in the package's cache folder)
from ..planar.entry import GRAVITY, OPTIONS, VECTOR
from ..planar.tree import check_finite, check_output
from . import rotary
from .layout import JTYPE, NQJ, NVJ, QIDX, REVOLUTE, SPHERICAL, VIDX, W_SPATIAL
from .tree import TMP_SIZE, forward_dynamics

BODY_INT = numba.types.Array(numba.int64, 2, "C", readonly=True)  # the frozen model's arrays
BODY_REAL_C = numba.types.Array(numba.float64, 2, "C", readonly=True)
SIZE_MISMATCH = -(1 << 40)  # status: q, v, tau or out has the wrong length (the full route says which)
_kernels = {}

# numba's cache checks this file's stamp only: it changes with the workspace contract of ``spatial`` (s18mem:
# revolute joints, as spherical ones, fill no S, UD, uD rows), so that no cached caller keeps the old kernels.


def forward_dynamics_packed(body_int, body_real, gravity, q, v, tau, buffer, out):
    """``spatial.forward_dynamics`` with its workspace packed in ``buffer`` (1-D float64): ws (nbodies,
    W_SPATIAL), tmp (TMP_SIZE,), then S and UD (rows, width, 6) and uD (rows, width), rows 0 or nbodies
    (``spatial.Workspace3D``). Compiled by ``kernel()``.

    Returns SIZE_MISMATCH unless q is (nq,) and v, tau, out are (nv,) (nq, nv: the last body's first index plus its
    count, the bodies being in coordinate order), else the status of ``spatial.forward_dynamics``.
    """
    n = body_int.shape[0]
    if not _sizes_match(body_int, q, v, tau, out):
        return SIZE_MISMATCH
    start = n * W_SPATIAL
    rest = buffer.shape[0] - start - TMP_SIZE
    rows = n if rest > 0 else 0
    width = rest // (13 * n) if rest > 0 else 1  # S, UD: 6 floats a column each, uD: 1
    ws = buffer[:start].reshape((n, W_SPATIAL))
    tmp = buffer[start:start + TMP_SIZE]
    start += TMP_SIZE
    size = rows * width * 6
    S = buffer[start:start + size].reshape((rows, width, 6))
    UD = buffer[start + size:start + 2 * size].reshape((rows, width, 6))
    uD = buffer[start + 2 * size:start + 2 * size + rows * width].reshape((rows, width))
    return forward_dynamics(body_int, body_real, gravity, q, v, tau, ws, S, UD, uD, tmp, out)


def forward_dynamics_rotary_packed(body_int, body_real, gravity, q, v, tau, buffer, out):
    """``rotary.forward_dynamics`` (a tree of spherical and revolute joints only) with its workspace the first
    nbodies * W_SPATIAL floats of ``buffer`` (``spatial.Workspace3D.buffer``). Compiled by ``kernel("rotary")``;
    returns as ``forward_dynamics_packed``."""
    n = body_int.shape[0]
    if not _sizes_match(body_int, q, v, tau, out):
        return SIZE_MISMATCH
    status = check_finite(q, v, tau)
    if status:
        return status
    ws = buffer[:n * W_SPATIAL].reshape((n, W_SPATIAL))
    status = rotary.kinematics(body_int, body_real, q, v, ws)
    if status:
        return status
    status = rotary.condense(body_int, body_real, v, tau, ws)
    if status:
        return status
    rotary.accelerate(body_int, gravity, ws, out)
    return check_output(out)


@numba.njit(inline="always", cache=True, **OPTIONS)
def _sizes_match(body_int, q, v, tau, out):
    """True if q is (nq,) and v, tau, out are (nv,) (nq, nv: the last body's first index plus its count, the bodies
    being in coordinate order). Inlined into the packed entries."""
    n = body_int.shape[0]
    nv = body_int[n - 1, VIDX] + body_int[n - 1, NVJ]
    return (q.shape[0] == body_int[n - 1, QIDX] + body_int[n - 1, NQJ] and v.shape[0] == nv and tau.shape[0] == nv
            and out.shape[0] == nv)


# the entry of each route (``route``)
ROUTES = {"rotary": forward_dynamics_rotary_packed, "general": forward_dynamics_packed}


def route(body_int):
    """The route of a model's forward dynamics: "rotary" if every joint is spherical or revolute (``rotary``),
    else "general" (``tree.forward_dynamics``)."""
    joints = body_int[:, JTYPE]
    return "rotary" if bool(((joints == SPHERICAL) | (joints == REVOLUTE)).all()) else "general"


def kernel(model_route="general"):
    """The entry of the route ``model_route`` (``ROUTES``) compiled for exactly (BODY_INT, BODY_REAL_C, GRAVITY,
    VECTOR x 5) on first use (loaded from numba's cache after the first process), no other signature: a first call
    compiles the route its model takes only."""
    compiled = _kernels.get(model_route)
    if compiled is None:
        signature = numba.int64(BODY_INT, BODY_REAL_C, GRAVITY, VECTOR, VECTOR, VECTOR, VECTOR, VECTOR)
        compiled = numba.njit(signature, cache=True, **OPTIONS)(ROUTES[model_route])
        compiled.disable_compile()  # other types are a TypeError at dispatch, not a new specialisation
        _kernels[model_route] = compiled
    return compiled


def accepts_model(model):
    """True if the model's packed arrays have the types of the fixed signature."""
    return (numba.typeof(model.body_int).key == BODY_INT.key and numba.typeof(model.body_real).key == BODY_REAL_C.key
            and numba.typeof(model.gravity).key == GRAVITY.key)
