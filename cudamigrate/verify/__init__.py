"""Checking the tool, the machine and the fixes: fixture cases, selftest, nvcc builds, the GPU, calibration,
doctor; and proving fixes on the user's own code: compile verification of `fix` (compile_check, rollback) and
`cudamigrate verify`, which builds and runs the user's program before and after the fix (program)."""
