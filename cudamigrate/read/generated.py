"""Text that `fix` itself wrote and that no rule may report: the helper blocks a fix inserts.

A fix that needs support code (the texture-object stand-ins of CM601/CM602) inserts it once per file between
`#ifndef CUDAMIGRATE_<NAME>` and `#endif /* CUDAMIGRATE_<NAME> */`. That code uses the new API correctly, but
its parameter names can equal a migrated reference's name (`const cudaTextureDesc *tex`), so a matcher reading
the migrated file could take them for uses of the old reference. Reporting them would make `fix` flag its own
output, and would count findings that were never in the scanned code; the engine and the texture matcher skip
these spans.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

MARK = b"CUDAMIGRATE_"
# the comment on an `#if` a fix wrote to keep code for older toolkits (CM503 compiles a removed capability's print
# only under `#if CUDART_VERSION < 13000`, as NVIDIA's v13.0 deviceQuery does): CM410 does not report that guard
# as a decided version test until the project declares a minimum toolkit, when the code it keeps may go
OWN_GUARD = "/* cudamigrate: compat guard */"
OWN_GUARD_MARK = re.compile(rb"/\*[ \t]*cudamigrate:[ \t]*compat guard[ \t]*\*/")
BLOCK = re.compile(rb"^[ \t]*#[ \t]*ifndef[ \t]+(CUDAMIGRATE_\w+)[^\n]*\n.*?^[ \t]*#[ \t]*endif[ \t]*/\*[ \t]*\1[ \t]*\*/",
                   re.M | re.S)


@dataclass(frozen=True)
class GeneratedSpans:
    """Sorted, disjoint [start, end) byte ranges of generated blocks."""

    starts: tuple[int, ...] = ()
    ends: tuple[int, ...] = ()

    @classmethod
    def of(cls, data: bytes) -> "GeneratedSpans":
        if MARK not in data:
            return cls()
        spans = [(m.start(), m.end()) for m in BLOCK.finditer(data)]
        return cls(tuple(s for s, _ in spans), tuple(e for _, e in spans))

    def __contains__(self, pos: int) -> bool:
        i = bisect.bisect_right(self.starts, pos) - 1
        return i >= 0 and pos < self.ends[i]

    def __bool__(self) -> bool:
        return bool(self.starts)
