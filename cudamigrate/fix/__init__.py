"""Applying findings' edits: conflict resolution, fixed point, syntax check, atomic writes."""
