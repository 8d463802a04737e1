"""numba kernels: pure functions of arrays (model arrays, state, workspace and outputs in; status code out).

Kernels never see Python objects. The public layer (``recursive_mbd.dynamics.calls``) validates, allocates and calls
them. Column layouts of the packed model and workspace arrays are in ``layout``.
"""
