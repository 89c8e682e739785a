"""`python -m profopt_ci`: the same entry point as the `profopt` command."""
import sys

from profopt_ci.cli.main import main

sys.exit(main())
