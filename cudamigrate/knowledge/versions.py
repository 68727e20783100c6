"""Checks of the version arguments against the rule catalog's range and the releases the headers were read for.

`--target-cuda 99.0` and inverted ranges (`--from 13.0 --target-cuda 12.0`)
used to be accepted and produced empty or misleading reports. The range is
what the loaded rules know: from the oldest version any rule names to the last
minor of the newest major (the catalog knows 13.0 changes: 13.x is accepted,
14.0 is not). Within the span of the per-release inventory (11.7 to 13.5,
data/api_releases.json.gz), `--target-cuda` must be a release that exists:
12.7 was never released, and a target past the newest release read (13.6)
would claim knowledge of changes nobody has read. `--from` and `--keep-compat`
may be older than the inventory (code still building with 10.2).
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
          rules: list[Rule], target_flag: str = "--target-cuda",
          releases: list[tuple[int, int]] | None = None) -> list[str]:
    """One message per problem; empty when the versions make sense together. `releases` (default: those of
    the per-release inventory) are the releases a target inside their span must be one of."""
    out = []
    known = _releases() if releases is None else releases
    rng = known_range(rules)
    fmt = lambda v: f"{v[0]}.{v[1]}"  # noqa: E731
    if rng is not None:
        lo, hi = rng
        for flag, v in ((target_flag, target), ("--from", from_v), ("--keep-compat", keep_compat)):
            if v is not None and not lo <= v <= hi:
                out.append(f"{flag} {fmt(v)} is outside the CUDA versions the rule catalog knows "
                           f"({fmt(lo)} to {hi[0]}.x)")
    if rng is None or rng[0] <= target <= rng[1]:
        out += _release_check(target, known, target_flag)
    if from_v is not None and from_v > target:
        out.append(f"--from {fmt(from_v)} is newer than {target_flag} {fmt(target)}: the range is inverted")
    if keep_compat is not None and keep_compat > target:
        out.append(f"--keep-compat {fmt(keep_compat)} is newer than {target_flag} {fmt(target)}")
    return out


def _releases() -> list[tuple[int, int]]:
    from .releases import versions

    return versions()


def _release_check(target: tuple[int, int], known: list[tuple[int, int]], flag: str) -> list[str]:
    """A target inside the inventory's major versions that is not one of its releases."""
    if not known or target in known or target[0] not in {v[0] for v in known} or target < known[0]:
        return []
    fmt = lambda v: f"{v[0]}.{v[1]}"  # noqa: E731
    if target > known[-1]:
        return [f"{flag} {fmt(target)} is newer than the newest CUDA release whose headers cudamigrate has read "
                f"({fmt(known[-1])})"]
    same = ", ".join(fmt(v) for v in known if v[0] == target[0])
    return [f"{flag} {fmt(target)} is not a CUDA release (the {target[0]}.x releases: {same})"]
