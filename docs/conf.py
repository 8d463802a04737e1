"""Sphinx configuration: ``sphinx-build -W --keep-going -b html docs docs/_build/html`` (the ``docs`` extra)."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # document this checkout, installed or not

project = "recursive_mbd"
author = "recursive_mbd authors"
copyright = "recursive_mbd authors"  # noqa: A001 - the name Sphinx reads
release = __import__("recursive_mbd").__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3  # links to a page's sections: conventions.md#model-files

# The docstrings are numpydoc where they have sections and prose elsewhere: render them, do not lint them here.
numpydoc_show_class_members = False
numpydoc_validation_checks = set()
numpydoc_xref_param_type = False
autosummary_generate = True
autosummary_ignore_module_all = False  # a module's table lists its __all__, as automodule does
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"

html_theme = "furo" if importlib.util.find_spec("furo") else "alabaster"
html_title = f"recursive_mbd {release}"


def _plain_bars(app, what, name, obj, options, lines):
    """Escape ``|`` outside literals: the docstrings are written for ``help()``, where |x| is an absolute value, not a
    reStructuredText substitution. Grid-table rows and line blocks (``| text``) are left alone."""
    for index, line in enumerate(lines):
        text = line.strip()
        if "|" not in text or text.startswith(("+-", "+=", "| ")) or (text.startswith("|") and text.endswith("|")):
            continue
        parts = line.split("``")
        parts[::2] = [part.replace("|", r"\|") for part in parts[::2]]
        lines[index] = "``".join(parts)


def setup(app):
    app.connect("autodoc-process-docstring", _plain_bars, priority=400)  # before numpydoc reads the sections
