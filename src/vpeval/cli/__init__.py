"""Command-line interface (typer): ``vpeval`` and its subcommands."""
