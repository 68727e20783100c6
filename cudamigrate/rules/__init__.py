"""Rule definitions: YAML data, validated at load time."""
