"""The ground floor: text made safe to print, line-start scans, internal-error lines, vocabularies, engine
options and configuration. Imports nothing else of cudamigrate."""
