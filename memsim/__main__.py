import sys

from memsim.workbench.cli.main import main

sys.exit(main())
