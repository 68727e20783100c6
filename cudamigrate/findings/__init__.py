"""Findings and what is attached to them: the data model, cost scoring, measured costs, suppressions."""
