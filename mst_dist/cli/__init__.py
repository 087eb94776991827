"""The command line (``mst-dist``): run configs, the run and its report."""
from mst_dist.cli.commands import main

__all__ = ["main"]
