"""Matching YAML rules against parsed sources."""
