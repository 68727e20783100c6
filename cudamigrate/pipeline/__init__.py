"""Many files: discover them, run the one-file scan (scan/) and fix (fix/) over them in worker processes, keep
each file's result in the result cache, and replay a whole scan's report while nothing it depends on changed."""
