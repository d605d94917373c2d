"""`python -m agentmap`: the `agentmap` command."""

import sys

from agentmap.cli import main

sys.exit(main())
