"""`python -m profopt_ci`: the same entry point as the `profopt` command."""
from profopt_ci.cli.command_line import program

program()
