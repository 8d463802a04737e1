"""numba kernels: pure functions of arrays (model arrays, state, workspace and outputs in; status code out).

Kernels never see Python objects. The layers above (``model``, ``dynamics``, ``integrate``) validate, allocate and
call them. By formulation: ``planar``, ``spatial``, ``augmented``; the compiled time loops in ``timeloops``; what
all share below them: the column layouts of the packed model and workspace arrays and the status codes
(``layout``), the joint codes (``joint_types``), the vectorised sin/cos (``trig``) and array copies written as
loops (``arrays``).
"""
