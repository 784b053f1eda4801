"""One module per `trnx` command, each a click command that `explorer.cli.main.COMMANDS` names."""
