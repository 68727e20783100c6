"""The command line: one module per command and the CLI's shared plumbing."""
