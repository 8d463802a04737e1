"""Exceptions raised by recursive_mbd.

Every error is a subclass of a builtin (``ValueError`` or ``RuntimeError``) so that callers who do not know
this module can still catch it; the message always says what is wrong and where (body, argument, time).
"""


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
