"""`python -m metastore.sql`: the SQL shell (the same as `metastore sql`)."""

import sys

from metastore.sql.cli import main

sys.exit(main())
