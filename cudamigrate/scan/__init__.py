"""One file scanned: the prefilter decides which rules it needs, then parse, match and findings (engine.py).
Below fix/, which re-scans what it rewrites, and pipeline/, which runs it over many files."""
