import gc

gc.disable()  # start-up without the cyclic collector: cli._settled turns it on for the work

from .entry.command import console  # noqa: E402

console()
