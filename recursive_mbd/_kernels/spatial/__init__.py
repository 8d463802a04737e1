"""The spatial kernels, the same pieces as ``planar`` for ``Model3D``: the articulated-body tree (``tree``: FD, CRBA,
RNEA, kinematics; ``entry``), the column layout (``layout``), elements, loops, the system, the Lie-group
generalised-alpha Newton solve (``implicit``) and bdf.
"""
