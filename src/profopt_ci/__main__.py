"""`python -m profopt_ci`: the same entry point as the `profopt` command."""
from profopt_ci.cli.main import program

program()
