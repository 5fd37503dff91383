import sys

from postmortem.cli import main

sys.exit(main())
