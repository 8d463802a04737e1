"""Per-call dynamics, above the builders: the public functions (``calls``: ``rm.forward_dynamics``,
``rm.inverse_dynamics``, ``rm.mass_matrix``, ``rm.energy``, kinematics), the spatial evaluation (``spatial``), the
loop layers that close loops with multipliers (``loops``, ``spatial_loops``), the augmented absolute-coordinate
formulation (``augmented``, ``augmented_tree``), many states in one call (``batch``) and
``rm.compiled_forward_dynamics`` (``compiled``). What the planar layers share sits below them in ``_evaluation``.

Imports the builders, the kernels and the foundation; never the time loops.
"""
