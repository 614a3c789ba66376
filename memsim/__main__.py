import sys

from memsim.workbench.cli import main

sys.exit(main())
