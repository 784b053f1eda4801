"""The `trnx` command: a thin layer over `simcore` and `explorer.model`."""
