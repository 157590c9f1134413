"""`python -m analysis.report`: the package's main, as when the report was one module."""

import sys

from analysis.report import main

sys.exit(main())
