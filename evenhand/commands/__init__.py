"""Subcommands of the ``evenhand`` CLI, one module each (see ``evenhand.cli``)."""
