import sys

from mst_dist.bench import cli

sys.exit(cli())
