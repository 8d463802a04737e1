"""Time integration, above the dynamics: ``rm.simulate`` (``simulate``) and what every run shares (``runs``:
inputs, events, run control and Ctrl-C, failures and the output budget; ``result``: ``SimulationResult`` and its
file format), the explicit methods' tableaus (``tableaus``), the scipy route (``scipy_route``), the spatial
time-loop front (``spatial_loop``), the Newton-iteration front ends (``implicit``, ``spatial_implicit``, ``bdf``:
siblings sharing ``newton``), ensembles (``ensemble``) and parameter sweeps on Dask (``sweeps``);
``formulation_hooks`` registers every formulation's time-loop hooks before a run compiles.

``method_names`` lists the methods without importing numba, for the files and the command line.
"""
