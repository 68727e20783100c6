"""Adopting the tool on a codebase: baselines and diff-scoped scans."""
