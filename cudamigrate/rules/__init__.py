"""What a rule is: the YAML unit's schema and validation, its safety limits, message and edit templates, and
rule selectors. Loading the rule set (which needs match/'s vocabulary) is knowledge/."""
