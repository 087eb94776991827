import sys

from mst_dist.cli.commands import main

sys.exit(main())
