"""Output formats. Each module exposes `render(run) -> str`."""
