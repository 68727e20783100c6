"""cudamigrate: find and fix deprecated, removed and slow CUDA API uses."""

__version__ = "0.1.0"
