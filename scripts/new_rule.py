#!/usr/bin/env python3
"""Scaffold a hand-written rule: its YAML (with the docs stub every rule carries), its fixture case named after
the rule file, and nothing else. Fill in the TODOs, then run `cudamigrate test ID --update` and review.

    python scripts/new_rule.py CM533 cudafoo-removed removals
    python scripts/new_rule.py CM533 cudafoo-removed removals --root /tmp/checkout   # another checkout

Writes
    rules/<family>/<ID>-<slug>.yaml            the rule; `docs:` (what, why, fix_safety, example) and
                                               `references:` are the documentation `cudamigrate explain` prints
    fixtures/<family>/<ID>-<slug>/before.cu    code it must flag (`// expect: ID`)
    fixtures/<family>/<ID>-<slug>/ok.cu        lookalikes it must not flag
    fixtures/<family>/<ID>-<slug>/fixture.yaml the case's settings
The skeleton loads and its case runs under `cudamigrate test ID`: replace the placeholder API `cudaTodoApi` with
the real one, write the real before/after/ok code, and cite the sources. `cudamigrate test ID --update` refuses
while a TODO remains, so that the findings it pins are the rule's, not the placeholder's.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RULE = """\
id: {id}
name: {slug}
family: {family}
summary: "TODO: one sentence: what is flagged and why it matters."
severity: warning
message: >-
  `{{{{ name }}}}` TODO: what is wrong here and what to write instead.
match:
  identifier:
    names: [cudaTodoApi]
    roles: [call]
fix:
  applicability: manual
cost:
  impact: hygiene
  effort_minutes: 5
docs:
  what: "TODO: exactly which code is matched, and which lookalikes are not."
  why: "TODO: what breaks or costs, with the header line or release note that says so."
  fix_safety: "TODO: manual, or why the rewrite keeps behaviour (safe) or what it changes (unsafe)."
  example: |
    cudaTodoApi();                                        // before
# at least one reference must be a URL a user can open (https://docs.nvidia.com/..., a release note): the
# tests refuse a CUDA rule without one; header lines are cited as `CUDA 13.0 toolkit header include/<file>:<line>`
references:
  - "TODO: the header (file:line), release note or documentation page this rule rests on"
  - "TODO: https://docs.nvidia.com/cuda/... (the page a user can open)"
"""

FIXTURE_YAML = """\
# TODO: what this case shows. A manual rule has no after.cu; a fixable one gets it from
# `python scripts/regen_fixture.py fixtures/{family}/{stem}` (review the diff).
rules: [{id}]
# TODO: `before: fail` with `before_error: REGEX` for a removed API (proves nvcc 13.0 rejects it), else `compile`;
# the placeholder API is not declared anywhere, so the skeleton's before.cu is not compiled.
# A manual rule (no after.cu) says so with `after: none`; a fixable one compiles its after.cu: `after: compile`.
compile: {{before: none, after: none, ok: compile}}
"""

BEFORE = """\
// {id}: TODO: the forms the rule must flag (every spelling, macro bodies, multi-line calls).
// TODO: include the header that declares the API; `cudaTodoApi` is a placeholder for it.

int main() {{
  return cudaTodoApi();  // expect: {id}
}}
"""

OK = """\
// Lookalikes of {id} that must not be reported: user functions, members and pointers with the same name,
// comments, strings, macros, dead `#if` branches.
struct Widget {{
  int cudaTodoApi() {{ return 1; }}  // a member with the same name
}};

int main() {{
  Widget w;
  // cudaTodoApi();  in a comment
  const char *doc = "cudaTodoApi()";
#if 0
  cudaTodoApi();  // a dead branch
#endif
  return w.cudaTodoApi() + (doc[0] == 'c' ? 0 : 1);
}}
"""


def scaffold(root: Path, rule_id: str, slug: str, family: str) -> list[Path]:
    """Write the rule, its case and docs stub under `root`; refuses to overwrite or to reuse an id."""
    if not re.fullmatch(r"CM\d{3,4}", rule_id):
        raise ValueError(f"{rule_id}: an id is CM and 3 or 4 digits")
    if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", slug):
        raise ValueError(f"{slug}: a slug is kebab-case (lower-case words joined by '-')")
    if not re.fullmatch(r"[a-z0-9_]+", family) or family == "catalog":
        raise ValueError(f"{family}: a family is a lower-case directory name under rules/ (not the generated catalog)")
    taken = sorted((root / "rules").rglob(f"{rule_id}-*.yaml"))
    if taken:
        raise ValueError(f"{rule_id} is taken by {taken[0].relative_to(root)}")
    stem = f"{rule_id}-{slug}"
    rule = root / "rules" / family / f"{stem}.yaml"
    case = root / "fixtures" / family / stem
    if case.exists():
        raise ValueError(f"{case.relative_to(root)} exists")
    fields = {"id": rule_id, "slug": slug, "family": family, "stem": stem}
    files = {rule: RULE, case / "fixture.yaml": FIXTURE_YAML, case / "before.cu": BEFORE, case / "ok.cu": OK}
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.format(**fields), encoding="utf-8")
    return list(files)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rule_id", metavar="ID")
    ap.add_argument("slug")
    ap.add_argument("family")
    ap.add_argument("--root", type=Path, default=ROOT, help="checkout to write into (default: this one)")
    a = ap.parse_args(argv)
    try:
        written = scaffold(a.root, a.rule_id.upper(), a.slug, a.family)
    except ValueError as exc:
        print(f"new_rule.py: {exc}", file=sys.stderr)
        return 2
    for p in written:
        print(f"wrote {p}")
    print(f"next: fill in the TODOs, then `cudamigrate test {a.rule_id.upper()} --update` and review findings.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
