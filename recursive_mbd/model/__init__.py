"""The builders, the layer above the kernels: the planar ``Model`` (``planar``) and the spatial ``Model3D``
(``spatial``, with its field checks in ``spatial_fields`` and the configuration maps in ``configuration``), the
chain builders (``chains``, ``rm.chains``), the joint types (``joints``, ``rm.joints``), the validation both
builders share (``_validation``, ``_builder``) and a planar model's workspace (``workspace``: the scratch arrays
its kernels write into, allocated once, and the kernel statuses as errors). A compiled model is frozen packed
arrays that every formulation reads.

Imports only the kernels and the foundation (``errors``, ``_checks``); nothing here imports the dynamics.
"""
