"""CTest entry for the herd_torch tests: exit 77 (skipped) when torch
cannot be imported, else run python/tests with unittest (0 pass, 1 fail).
"""

import os
import sys
import unittest

try:
    import torch  # noqa: F401
except ImportError as e:
    print("herd_torch tests skipped: torch is not importable (%s); "
          "install python3-torch" % e)
    sys.exit(77)

here = os.path.dirname(os.path.abspath(__file__))
suite = unittest.defaultTestLoader.discover(here, top_level_dir=here)
result = unittest.TextTestRunner(verbosity=2).run(suite)
sys.exit(0 if result.wasSuccessful() else 1)
