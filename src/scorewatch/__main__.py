"""`python -m scorewatch ...` is `scorewatch ...`."""

import sys

from .cli import main

sys.exit(main())
