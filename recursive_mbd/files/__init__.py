"""Model files, above the analyses: the TOML format (``io``, ``rm.io``; its docstring is the format reference),
the deck reader (``deck``), robot descriptions (``urdf``, ``mjcf``: ``rm.load_urdf``, ``rm.load_mjcf``, on the
frame tree of ``_import_tree``) and what they produce (``model_file``). Result files are ``SimulationResult.save`` /
``load`` (``integrate.result``).
"""
