"""Matching rules against parsed sources: the rule language (matchers, conditions, edits), the analyses its
conditions ask, the preprocessor model, and the builtin migrations (migrations/)."""
