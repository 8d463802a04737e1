"""The planar kernels: the tree (``tree``: kinematics, the recursive forward dynamics, RNEA, CRBA, energy; its
one-signature short path in ``entry``), the force elements (``elements``), the loops (``loops``: constraint rows,
constrained forward dynamics, projection), the recursive formulation's system for the time loops (``system``),
the O(N) Newton solve and generalised-alpha loop (``implicit``) and the bdf loop (``bdf``).
"""
