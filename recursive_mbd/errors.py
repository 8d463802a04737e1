"""Exceptions raised by recursive_mbd.

Every error is a subclass of a builtin (``ValueError`` or ``RuntimeError``) so that callers who do not know
this module can still catch it; the message always says what is wrong and where (body, argument, time).
``unknown_name`` words the message for a name that is not among the known ones, the same everywhere.
"""

import difflib


class ModelError(ValueError):
    """A model is ill-formed: unknown parent or joint, bad mass or inertia, singular articulated inertia, ..."""


class StateError(ValueError):
    """A state, force or option vector has the wrong size or holds NaN/inf."""


class ResultFileError(ValueError):
    """A result file that cannot be read: not a result, corrupted, truncated, or not of the given model. The
    message names the file and what is wrong."""


class SimulationError(RuntimeError):
    """An integration failed (non-finite state, step-size underflow, too many steps, singular dynamics).

    Attributes
    ----------
    t : float
        Time at which the failure was detected [s].
    result : SimulationResult
        Everything computed up to the last accepted step, so a long run that fails keeps its work; its
        ``success`` is False and its ``message`` is this error's message.
    """

    def __init__(self, message, t, result):
        super().__init__(message)
        self.t = t
        self.result = result
        if result is not None:  # the kept samples say why they end before t_end
            result.message = message


def closest_name(name, known):
    """The entry of ``known`` (strings) closest to ``name``: the one equal but for case, else difflib's best match
    (None if no entry is close enough, or ``name`` is no string)."""
    if not isinstance(name, str):
        return None
    known = [k for k in known if isinstance(k, str)]
    lowered = {}
    for k in known:
        lowered.setdefault(k.lower(), k)
    if name.lower() in lowered:
        return lowered[name.lower()]
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1)
    return lowered[close[0]] if close else None


def name_list(names, shown=10):
    """``names`` quoted and comma-separated; more than ``shown`` are cut to the first and last few, with the count
    ("'a', 'b', 'c', ..., 'y', 'z' (120 in all)"), so that a message about a chain of 1e5 bodies stays short."""
    names = list(names)
    if len(names) <= shown:
        return ", ".join(repr(n) for n in names)
    head = (shown + 1) // 2
    return (", ".join(repr(n) for n in names[:head]) + ", ..., " + ", ".join(repr(n) for n in names[head - shown:])
            + f" ({len(names)} in all)")


def unknown_name(kind, name, known, plural=None, shown=10):
    """The message for a ``kind`` (body, joint, loop, element, point...) named ``name`` that is not among
    ``known``: "unknown body 'Link1' (did you mean 'link1'?); known bodies: 'link0', 'link1', ...". ``plural``
    defaults to ``kind + "s"``; more than ``shown`` known names are cut to the first and last few."""
    known = list(known)
    plural = plural or f"{kind}s"
    close = closest_name(name, known)
    hint = f" (did you mean {close!r}?)" if close is not None else ""
    listing = f"known {plural}: {name_list(known, shown)}" if known else f"there are no {plural}"
    return f"unknown {kind} {name!r}{hint}; {listing}"
