"""The builtin migrations: matchers written in Python for what the YAML rule language cannot say (texture and
surface references, NPP, device properties, inline PTX, CM801 unused suppressions), registered by name for
`match: {builtin: ...}`."""
