"""Model files, above the analyses: the TOML format (``io``, ``rm.io``; its docstring is the format reference),
the deck reader (``deck``) and what both produce (``model_file``). Result files are ``SimulationResult.save`` /
``load`` (``integrate.result``).
"""
