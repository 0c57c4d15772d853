"""``python -m evenhand`` runs the CLI."""

import sys

from evenhand.cli import main

sys.exit(main())
