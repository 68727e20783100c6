"""Proving a fix on the user's own code: compile verification of `fix` (`compile_check`, `rollback`) and
`cudamigrate verify`, which builds and runs the user's program before and after the fix (`program`).
Checking the tool itself is toolcheck/'s job."""
