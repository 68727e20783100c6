"""Reading the user's files: source bytes defensively, and the per-project declaration index."""
