"""Subcommands of the `scorewatch` command line, one module each."""
