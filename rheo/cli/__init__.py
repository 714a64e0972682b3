"""The `rheo` command line: `main` (rheo.cli.main) and one module per subcommand; nothing else imports it."""

from rheo.cli.main import main

__all__ = ["main"]
