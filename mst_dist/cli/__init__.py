"""The command line (``mst-dist``): arguments, run configs, the commands, the summary and report."""
from mst_dist.cli.commands import main

__all__ = ["main"]
