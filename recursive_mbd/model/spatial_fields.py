"""The fields of a spatial body and how ``Model3D`` checks and keeps them: 3-vectors, unit axes, rotations (matrices
or quaternions), inertia tensors (one at a time and in blocks, for ``add_bodies``), the (6,) packing of inertias,
and the column table of the bodies. numpy only.
"""

import numpy as np

from ..errors import ModelError
from . import _validation as V

_ROTATION_TOL = 1e-9


def _vector3(value, what):
    arr = V.real_numbers(value, what, "3 real numbers").astype(np.float64)
    if arr.shape != (3,):
        raise ModelError(f"{what} must be 3 numbers (x, y, z), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{what} must be finite, got {arr.tolist()}")
    return arr


def _unit(value, what):
    arr = _vector3(value, what)
    largest = float(np.abs(arr).max())
    if largest == 0.0:
        raise ModelError(f"{what} must be a non-zero vector, got {arr.tolist()}")
    if not 1e-150 < largest < 1e150:  # its squares would under- or overflow (1e-300 counted as zero): scale first
        arr = arr / largest
    return arr / np.linalg.norm(arr)


def quaternion_matrix(quat):
    """Rotation matrix (3, 3) of a unit quaternion (w, x, y, z) (body-to-reference: columns are the body axes)."""
    w, x, y, z = quat
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def axis_rotation(axis, angle):
    """Rotation matrix (3, 3) by ``angle`` [rad] about the unit ``axis`` (right hand), Rodrigues' formula."""
    a = np.asarray(axis, dtype=float)
    c, s = np.cos(angle), np.sin(angle)
    cross = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return c * np.eye(3) + s * cross + (1.0 - c) * np.outer(a, a)


def _rotation(value, what):
    """A 3x3 rotation matrix from None, a 3x3 matrix or a unit quaternion (w, x, y, z); ModelError otherwise."""
    if value is None:
        return np.eye(3)
    arr = V.real_numbers(value, what, "a 3x3 rotation matrix or a quaternion (w, x, y, z)").astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{what} must be finite, got {arr.tolist()}")
    if arr.shape == (4,):
        norm = float(np.linalg.norm(arr))
        if abs(norm - 1.0) > _ROTATION_TOL:
            raise ModelError(f"{what}: a quaternion must have unit norm (to 1e-9), got norm {norm!r}")
        return quaternion_matrix(arr / norm)
    if arr.shape != (3, 3):
        raise ModelError(f"{what} must be a 3x3 rotation matrix or a quaternion (w, x, y, z), got shape {arr.shape}")
    error = float(np.max(np.abs(arr.T @ arr - np.eye(3))))
    if error > _ROTATION_TOL:
        raise ModelError(f"{what} is not orthonormal (|R^T R - I| = {error:.3g} > 1e-9)")
    if np.linalg.det(arr) < 0.0:
        raise ModelError(f"{what} is a reflection (det = -1), not a rotation")
    return arr


def _inertia(value, what):
    """The 3x3 inertia tensor from a scalar, its 6 entries (Ixx, Iyy, Izz, Ixy, Ixz, Iyz) or a 3x3 matrix."""
    arr = V.real_numbers(value, what, "a number, 6 numbers or a 3x3 matrix", "real numbers").astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{what} must be finite, got {arr.tolist()}")
    if arr.shape == ():
        tensor = float(arr) * np.eye(3)
    elif arr.shape == (6,):
        xx, yy, zz, xy, xz, yz = arr
        tensor = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    elif arr.shape == (3, 3):
        tensor = arr
        scale = max(float(np.max(np.abs(arr))), np.finfo(float).tiny)
        if float(np.max(np.abs(arr - arr.T))) > 1e-12 * scale:
            raise ModelError(f"{what} must be symmetric, got {arr.tolist()}")
        tensor = 0.5 * arr + 0.5 * arr.T  # (halved first: the sum of two huge entries would overflow)
    else:
        raise ModelError(f"{what} must be a number, its 6 entries (Ixx, Iyy, Izz, Ixy, Ixz, Iyz) or a 3x3 matrix, "
                         f"got shape {arr.shape}")
    moments = np.linalg.eigvalsh(tensor)  # ascending
    tol = 1e-12 * max(float(np.max(np.abs(moments))), 0.0)
    if moments[0] < -tol:
        raise ModelError(f"{what} must be positive semidefinite, its principal moments are {moments.tolist()}")
    if moments[0] < (moments[2] - moments[1]) - 4 * tol:  # I1 + I2 >= I3 without overflowing the sum
        raise ModelError(f"{what} violates the triangle inequality of principal moments (I1 + I2 >= I3): "
                         f"{moments.tolist()} is no rigid body's inertia")
    return tensor


def _packed_inertia(tensors):
    """(..., 6) entries (xx, yy, zz, xy, xz, yz) of symmetric (..., 3, 3) tensors."""
    return np.stack((tensors[..., 0, 0], tensors[..., 1, 1], tensors[..., 2, 2], tensors[..., 0, 1],
                     tensors[..., 0, 2], tensors[..., 1, 2]), axis=-1)


def _full_inertia(packed):
    """(..., 3, 3) symmetric tensors from their (..., 6) entries (xx, yy, zz, xy, xz, yz)."""
    xx, yy, zz, xy, xz, yz = np.moveaxis(packed, -1, 0)
    return np.stack((np.stack((xx, xy, xz), -1), np.stack((xy, yy, yz), -1), np.stack((xz, yz, zz), -1)), axis=-2)


def _quaternion_matrices(quats):
    """Rotation matrices (k, 3, 3) of unit quaternions (k, 4) (w, x, y, z)."""
    w, x, y, z = quats.T
    return np.stack((np.stack((1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)), axis=-1),
                     np.stack((2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)), axis=-1),
                     np.stack((2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)), axis=-1)), axis=1)


# the inertia about the centre of mass is kept as its 6 entries (xx, yy, zz, xy, xz, yz): the tensors are exactly
# symmetric once checked (``_inertia``, ``_checked_inertias`` symmetrise them), so no value is lost (24 bytes a body
# less than (3, 3): 24 MB for a 1e6-body chain, benchmarks/spatial_memory.py)
_FIELDS = {"parent": ((), np.int64), "jtype": ((), np.int64), "mass": ((), np.float64),
           "inertia": ((6,), np.float64), "com": ((3,), np.float64), "parent_point": ((3,), np.float64),
           "child_point": ((3,), np.float64), "rotation": ((3, 3), np.float64), "a1": ((3,), np.float64),
           "a2": ((3,), np.float64)}


_COMPILE_BLOCK = 65536  # bodies per block of add_bodies' inertia checks (bounded temporaries)


_TRIM_BODIES = 100_000  # models this large hand the memory compile freed back to the system


def _release_freed_memory():
    """Hand freed heap memory back to the operating system (glibc's ``malloc_trim``; elsewhere nothing).

    glibc serves arrays below its adaptive mmap threshold (up to 32 MB) from its heap and keeps the pages of freed
    ones there: the table columns that compile releases (24 MB each at 1e6 bodies) would stay resident through the
    forward dynamics that follows (measured 120 MB at 1e6 bodies; benchmarks/spatial_memory.py)."""
    try:
        import ctypes  # noqa: PLC0415
        import ctypes.util  # noqa: PLC0415

        name = ctypes.util.find_library("c")
        if name:
            trim = getattr(ctypes.CDLL(name), "malloc_trim", None)
            if trim is not None:
                trim(0)
    except OSError:
        pass


def _checked_inertias(tensors, fail):
    """(k, 3, 3) inertia tensors checked as ``add_body`` checks one (finite, symmetric to 1e-12 relative, positive
    semidefinite, the triangle inequality) and symmetrised: a new (k, 6) array of their entries (xx, yy, zz, xy,
    xz, yz; ``_packed_inertia``). The checks run in blocks of
    ``_COMPILE_BLOCK`` tensors so that a million-body chain makes no (k, 3, 3) temporaries beyond the result;
    ``fail(mask, message)`` reports the first bad one."""
    k = tensors.shape[0]
    out = np.empty((k, 6))
    for start in range(0, k, _COMPILE_BLOCK):
        block = slice(start, min(start + _COMPILE_BLOCK, k))
        part = tensors[block]

        def refuse(bad, message, block=block):
            mask = np.zeros(k, dtype=bool)
            mask[block] = bad
            fail(mask, message)

        finite = np.isfinite(part).reshape(part.shape[0], -1).all(axis=1)
        if not finite.all():
            refuse(~finite, "inertia must be finite")
        scale = np.maximum(np.abs(part).reshape(part.shape[0], -1).max(axis=1), np.finfo(float).tiny)
        transpose = np.swapaxes(part, 1, 2)
        asym = np.abs(part - transpose).reshape(part.shape[0], -1).max(axis=1) > 1e-12 * scale
        if asym.any():
            refuse(asym, "inertia must be symmetric")
        symmetric = part + transpose
        symmetric *= 0.5
        out[block] = _packed_inertia(symmetric)
        moments = np.linalg.eigvalsh(symmetric)
        tol = 1e-12 * np.abs(moments).max(axis=1)
        if np.any(moments[:, 0] < -tol):
            refuse(moments[:, 0] < -tol, "inertia must be positive semidefinite")
        bad = moments[:, 0] + moments[:, 1] < moments[:, 2] - 4 * tol
        if bad.any():
            refuse(bad, "inertia violates the triangle inequality of principal moments (I1 + I2 >= I3)")
    return out


def _default_number(label):
    """k if ``label`` is "body<k>" as a default name is spelled (decimal, no sign, no leading zero), else None."""
    if not isinstance(label, str) or not label.startswith("body"):
        return None
    digits = label[4:]
    if not digits.isdigit() or not digits.isascii() or (len(digits) > 1 and digits[0] == "0"):
        return None
    return int(digits)


class _DefaultNames:
    """The default names "body<index>" of k bodies from ``first``, made only when one is read (an error message)."""

    def __init__(self, first, k):
        self.first = first
        self.k = k

    def __len__(self):
        return self.k

    def __getitem__(self, i):
        return f"body{self.first + i}"


class _BodyTable:
    """The bodies of a Model3D as columns (numpy arrays that grow by doubling): a million-body chain costs a few
    hundred bytes per body, not a Python record each. Names are not stored here (``Model3D`` keeps the explicit
    ones and generates the default ``"body<index>"`` on demand)."""

    def __init__(self):
        self.size = 0
        self.data = {key: np.zeros((16, *shape), dtype=kind) for key, (shape, kind) in _FIELDS.items()}

    def column(self, key):
        """The field ``key`` of every body, a view (n, ...)."""
        return self.data[key][:self.size]

    def extend(self, count, columns):
        """Append ``count`` bodies; ``columns`` holds every field, broadcastable to (count, ...) (validated)."""
        self.size = V.extend_columns(self.data, self.size, count, columns)

    def share(self, views):
        """Replace columns by ``views`` (n, ...) of the same values (a compiled model's packed arrays), releasing
        their own arrays; the other columns are trimmed to the n bodies."""
        for key, values in self.data.items():
            view = views.get(key)
            if view is None:
                self.data[key] = values[:self.size] if values.shape[0] == self.size else values[:self.size].copy()
                continue
            if view.shape != values[:self.size].shape or not np.array_equal(view, values[:self.size]):
                raise RuntimeError(f"body table: the packed column {key!r} does not hold the table's values")
            self.data[key] = view



def _checks_real(value, what):
    """``value`` as a float64 array; TypeError naming ``what`` unless it holds real numbers."""
    return V.real_numbers(value, what, "real numbers").astype(np.float64)
