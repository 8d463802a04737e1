"""What the planar and the spatial builders (``Model``, ``Model3D``) check alike: scalars, body names, parents and
body indices, joint type names, the batch checks of ``add_bodies``, loop names and lengths, and the growth of their
column tables. Errors name the argument and the body (or loop), in the same words for both dimensions.

numpy only; below both builders.
"""

import math
import numbers

import numpy as np

from ..errors import ModelError, unknown_name

GROUND = -1


def real_numbers(value, what, expected, kind_expected=None):
    """numpy's array of ``value`` (not converted), TypeError unless it holds real numbers (booleans and integers
    included): "{what} must be {expected}: ..." when numpy cannot read it, "{what} must be {kind_expected}, got
    <dtype> values" (default ``expected``) for another kind of values (complex, strings, objects)."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what} must be {expected}: {err}") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{what} must be {kind_expected or expected}, got {arr.dtype} values")
    return arr


def finite_scalar(value, what, echo=False):
    """``value`` as a finite float; TypeError unless a real number (``echo``: the message shows the value too, as
    the spatial builder's do), ModelError if not finite."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        shown = f" {value!r:.40}" if echo else ""
        raise TypeError(f"{what} must be a real number, got {type(value).__name__}{shown}")
    value = float(value)
    if not math.isfinite(value):
        raise ModelError(f"{what} must be finite, got {value}")
    return value


def nonnegative(value, what, echo=False):
    """A finite float >= 0 (``finite_scalar``), else the error naming ``what``."""
    value = finite_scalar(value, what, echo)
    if value < 0.0:
        raise ModelError(f"{what} must be >= 0, got {value}")
    return value


def body_label(name, index, lookup):
    """(label, where) of the body to be added at ``index``: its name (default ``"body<index>"``) and how messages
    name it; TypeError unless a non-empty string, ModelError for "ground" or a name ``lookup`` already knows."""
    label = name if name is not None else f"body{index}"
    if not isinstance(label, str) or not label:
        raise TypeError(f"body name must be a non-empty string, got {name!r}")
    where = f"body {label!r} (index {index})"
    if label == "ground":
        raise ModelError(f"{where}: the name 'ground' is reserved for the fixed frame")
    owner = lookup(label)
    if owner is not None:
        raise ModelError(f"{where}: duplicate body name, already used by body {owner}")
    return label, where


def joint_code(joint, where, codes):
    """The code of the joint type name ``joint`` (any case) in ``codes``; TypeError or ModelError naming ``where``."""
    if not isinstance(joint, str):
        raise TypeError(f"{where}: joint must be a string, got {type(joint).__name__}")
    if joint.lower() not in codes:
        raise ModelError(f"{where}: {unknown_name('joint type', joint, sorted(codes))}")
    return codes[joint.lower()]


def _name_or_integer(value, lookup, unknown_name, not_integer):
    """The index of the body named ``value`` (``lookup``; ModelError(unknown_name()) if none has it), or the integer
    ``value`` as it is (not range-checked); TypeError(not_integer()) for anything else (booleans included)."""
    if isinstance(value, str):
        index = lookup(value)
        if index is None:
            raise ModelError(unknown_name())
        return index
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(not_integer())
    return int(value)


def resolve_parent(parent, where, lookup, nbodies, known):
    """The index of ``parent``: "ground" or -1 (GROUND), a body name (``lookup``) or an index below ``nbodies``;
    ``known()`` lists the body names for the message (its closest match and a few of them)."""
    if isinstance(parent, str) and parent == "ground":
        return GROUND
    parent = _name_or_integer(
        parent, lookup, lambda: f"{where}: {unknown_name('parent', parent, ['ground', *known()], 'bodies')}",
        lambda: f"{where}: parent must be 'ground', -1, a body index or a body name, got {parent!r}")
    if parent == GROUND:
        return GROUND
    if not 0 <= parent < nbodies:  # (a name's index always is)
        raise ModelError(f"{where}: unknown parent index {parent}; the model has {nbodies} bodies "
                         "and a parent must be added before its child")
    return parent


def body_index(body, lookup, nbodies, known):
    """Index of a body given by name (``lookup``) or index (negative indices count from the end); ``known()`` lists
    the body names for the message of an unknown name (its closest match and a few of them)."""
    index = _name_or_integer(body, lookup, lambda: unknown_name("body", body, known(), "bodies"),
                             lambda: f"body must be a name or an index, got {body!r}")
    if not -nbodies <= index < nbodies:  # (a name's index always is)
        raise ModelError(f"body index {index} out of range for {nbodies} bodies")
    return index % nbodies


def is_ground(body):
    """Whether ``body`` names the ground: "ground" or the index -1 (a boolean is no index)."""
    return (isinstance(body, str) and body == "ground") or (
        isinstance(body, numbers.Integral) and not isinstance(body, (bool, np.bool_)) and int(body) == GROUND)


def prefixed_body_index(body, where, body_index):
    """``body_index(body)``, its ModelError or TypeError prefixed by ``where`` (an element's or loop's argument)."""
    try:
        return body_index(body)
    except (ModelError, TypeError) as err:
        raise type(err)(f"{where}: {err}") from None


def two_ends(where, resolve, check_point, body_a, point_a, body_b, point_b, name_ground=True):
    """(a, point_a, b, point_b) of an element or loop between two different bodies, in the order they are checked:
    the indices by ``resolve(body, what)``, then the points by ``check_point(point, what)``. Two ends on the same
    body are a ModelError ("the same body", or "the same ground" where ``name_ground`` and both are the ground)."""
    a = resolve(body_a, f"{where}: body_a")
    b = resolve(body_b, f"{where}: body_b")
    if a == b:
        raise ModelError(f"{where}: body_a and body_b are the same {'ground' if name_ground and a < 0 else 'body'}")
    return a, check_point(point_a, f"{where}: point_a"), b, check_point(point_b, f"{where}: point_b")


def batch_parents(parent, width=None):
    """``add_bodies``' parent indices as an array: ModelError unless a non-empty 1-D integer array (the message shows
    it, cut to ``width`` characters if given)."""
    parent = np.asarray(parent)
    if parent.ndim != 1 or parent.size == 0 or not np.issubdtype(parent.dtype, np.integer):
        shown = repr(parent) if width is None else f"{parent!r:.{width}}"
        raise ModelError(f"add_bodies: parent must be a non-empty 1-D array of body indices, got {shown}")
    return parent


def batch_failure(names, first):
    """``fail(mask, message)`` of ``add_bodies``: the ModelError naming the first body of the batch (names, indices
    from ``first``) where ``mask`` is true."""

    def fail(mask, message):
        bad = int(np.flatnonzero(mask)[0])
        raise ModelError(f"body {names[bad]!r} (index {first + bad}): {message}")

    return fail


def batch_joint_code(joint, codes, parent, index, fail):
    """The joint code of an ``add_bodies`` batch (one type name for all), after checking each body's parent index
    (-1 or below its own index ``index``)."""
    if not isinstance(joint, str) or joint.lower() not in codes:
        raise ModelError(f"add_bodies: {unknown_name('joint type', joint, sorted(codes))}")
    bad_parent = (parent < -1) | (parent >= index)
    if bad_parent.any():
        fail(bad_parent, "unknown parent index (a parent must be added before its child)")
    return codes[joint.lower()]


def loop_label(name, where, count, compiled, loop_names, kind, kinds):
    """(label, kind in lower case) of the loop to be added as number ``count``: ModelError once the model is
    compiled, for a duplicate name or a kind not in ``kinds``; TypeError unless the name is a non-empty string."""
    if compiled:
        raise ModelError(f"cannot add {where}: the model was compiled (it is frozen once a dynamics function "
                         "has used it); add loops before the first use")
    label = name if name is not None else f"loop{count}"
    if not isinstance(label, str) or not label:
        raise TypeError(f"loop name must be a non-empty string, got {name!r}")
    if label in loop_names:
        raise ModelError(f"{where}: duplicate loop name")
    if not isinstance(kind, str) or kind.lower() not in kinds:
        raise ModelError(f"{where}: {unknown_name('loop kind', kind, sorted(kinds))}")
    return label, kind.lower()


def loop_length(length, distance, kind, where, echo=False):
    """A distance loop's length (> 0, required), else 0.0 (ModelError if a loop of another ``kind`` has one)."""
    if distance:
        if length is None:
            raise ModelError(f"{where}: a distance loop needs its length")
        length = finite_scalar(length, f"{where}: length", echo)
        if not length > 0.0:
            raise ModelError(f"{where}: length must be > 0, got {length}")
        return length
    if length is not None:
        raise ModelError(f"{where}: length applies to distance loops only, not {kind!r}")
    return 0.0


def extend_columns(data, size, count, columns):
    """Append ``count`` rows to the column arrays ``data`` (a dict; each grown by doubling, in place in the dict)
    that hold ``size`` rows, from ``columns`` (a field each, broadcastable to (count, ...)); returns the new size."""
    need = size + count
    if need > data["mass"].shape[0]:
        capacity = max(need, 2 * data["mass"].shape[0])
        for key, values in data.items():
            grown = np.zeros((capacity, *values.shape[1:]), dtype=values.dtype)
            grown[:size] = values[:size]
            data[key] = grown
    for key, values in columns.items():
        data[key][size:need] = values
    return need

