"""The package's version (one place; ``mst_dist.__version__`` re-exports it)."""
__version__ = "0.1.0"
