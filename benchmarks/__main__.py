import sys

from benchmarks import cli

sys.exit(cli())
