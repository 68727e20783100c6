"""The `cudamigrate` command as installed: every front end composed into one click group (command.py)."""
