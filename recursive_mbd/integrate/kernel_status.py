"""The exception of a compiled kernel's status, for a planar model or a ``Model3D``: one place below the run
machinery (``runs``) and the result (``result``), which both report the statuses of the run's dynamics."""

from ..model.spatial import Model3D
from ..model.statuses import raise_spatial_loop_status, raise_status


def raise_kernel_status(model, status):
    """The exception of a kernel status: the planar route's, or the spatial one's (q, v, tau of a Model3D; the tree's
    statuses and the loops')."""
    if isinstance(model, Model3D):
        raise_spatial_loop_status(model, status, ("q", "v", "tau"))
    raise_status(model, status)
