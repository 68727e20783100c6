"""Checks of the version arguments against the rule catalog's range.

`--target-cuda 99.0` and inverted ranges (`--from 13.0 --target-cuda 12.0`)
used to be accepted and produced empty or misleading reports. The range is
what the loaded rules know: from the oldest version any rule names to the last
minor of the newest major (the catalog knows 13.0 changes: 13.x is accepted,
14.0 is not).
"""

from __future__ import annotations

from ..rules.schema import Rule


def _v(s: str) -> tuple[int, int]:
    a, b = s.split(".")
    return int(a), int(b)


def known_range(rules: list[Rule]) -> tuple[tuple[int, int], tuple[int, int]] | None:
    vs = [_v(v) for r in rules for v in (r.deprecated_in, r.removed_in) if v]
    if not vs:
        return None
    return min(vs), (max(vs)[0], 99)


def check(target: tuple[int, int], from_v: tuple[int, int] | None, keep_compat: tuple[int, int] | None,
          rules: list[Rule], target_flag: str = "--target-cuda") -> list[str]:
    """One message per problem; empty when the versions make sense together."""
    out = []
    rng = known_range(rules)
    fmt = lambda v: f"{v[0]}.{v[1]}"  # noqa: E731
    if rng is not None:
        lo, hi = rng
        for flag, v in ((target_flag, target), ("--from", from_v), ("--keep-compat", keep_compat)):
            if v is not None and not lo <= v <= hi:
                out.append(f"{flag} {fmt(v)} is outside the CUDA versions the rule catalog knows "
                           f"({fmt(lo)} to {hi[0]}.x)")
    if from_v is not None and from_v > target:
        out.append(f"--from {fmt(from_v)} is newer than {target_flag} {fmt(target)}: the range is inverted")
    if keep_compat is not None and keep_compat > target:
        out.append(f"--keep-compat {fmt(keep_compat)} is newer than {target_flag} {fmt(target)}")
    return out
