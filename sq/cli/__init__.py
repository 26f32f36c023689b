"""The `sq` command: `main` (parser and the run/check/ir commands), `args` (what the commands
share), one module per study command (`study`, `capacity`)."""
