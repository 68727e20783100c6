"""The ground floor: text made safe to print, top-level comma splits, line-start scans, internal-error lines,
vocabularies, engine options, configuration, and where the CUDA toolkit is. Imports nothing else of cudamigrate."""
