"""The exception of a compiled kernel's status, for a planar model or a ``Model3D``: one place below the run
machinery (``runs``) and the result (``result``), which both report the statuses of the run's dynamics."""

from ..model.spatial import Model3D
from ..model.workspace import raise_status


def raise_kernel_status(model, status):
    """The exception of a kernel status: the planar route's, or the spatial one's (q, v, tau of a Model3D)."""
    if isinstance(model, Model3D):
        from ..dynamics.spatial_loops import _raise  # noqa: PLC0415  (the tree's statuses, and the loops')

        _raise(model, status, ("q", "v", "tau"))
    raise_status(model, status)
