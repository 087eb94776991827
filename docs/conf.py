"""Sphinx configuration of the mst-dist documentation.

Build it with ``python -m sphinx -W -n -b html docs docs/_build/html`` (``-W``:
warnings are errors; ``-n``: every internal reference must resolve).  The API
reference is generated from the package's numpydoc docstrings, the
configuration reference from ``mst_dist/mst-dist.yaml`` and the run-config
loader, the CLI reference from the argument parser (``docs/_ext/``).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "_ext"))

import mst_dist  # noqa: E402

project = "mst-dist"
author = "the mst-dist authors"
copyright = "the mst-dist authors"
release = mst_dist.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "numpydoc",
    "sphinxarg.ext",
    "mst_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
# Pages the table of contents names before they are written: left out of it while absent
# (docs/_ext/mst_docs.py), listed as soon as they exist.
mst_optional_pages = ["clustering"]

# Markdown pages (MyST): headings get anchors, so that ``page.md#a-heading`` links are
# checked like any other reference.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]

# numpydoc renders the docstrings; parameter types stay text (no cross-reference per type word).
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
numpydoc_class_members_toctree = False

autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "groupwise"
autodoc_typehints = "none"

# -n (nitpicky): every cross-reference inside the project must resolve.  Names of other
# projects (NumPy, Dask, ...) cannot be linked without network access (no intersphinx),
# so those are let through, with the project's own internal modules named below.
nitpicky = True
_EXTERNAL = r"(numpy|np|dask|distributed|pandas|pd|scipy|networkx|nx|pyarrow|pa|cupy|numba|bokeh|sklearn|os|pathlib|logging|argparse|collections|typing|concurrent|asyncio)(\..*)?"
# Docstrings also name the modules behind the public names (``mst_dist.io.interop``,
# ``mst_dist.engine.checkpoint``, ...) and, inside them, their neighbours by bare name; the
# reference documents the public names only, so those are not links.
_INTERNAL = (r"mst_dist\.(io|engine|deploy|generators|graph|kernels|diagnostics|nx|bench|"
             r"cli\.parser|phases\._Name)(\..*)?|parameters|FORMATS|GRAPH_FORMATS|nodes|ConfigError")
nitpick_ignore_regex = [
    ("py:.*", _INTERNAL),
    ("py:.*", _EXTERNAL),
]

html_theme = "alabaster"
html_title = f"mst-dist {release}"
html_static_path = ["_static"]
html_css_files = ["mst.css"]
# room for the reference tables (key, type, default, meaning)
html_theme_options = {"page_width": "1300px", "body_max_width": "none", "sidebar_width": "230px"}
