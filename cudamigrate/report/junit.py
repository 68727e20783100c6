"""JUnit XML for CI test tabs: one <testsuite> per rule, one failing <testcase> per finding.

A clean run gives one passing test case, so the CI shows a green check rather than nothing.
Characters XML 1.0 cannot carry (most C0 controls) are replaced, so the document is always well-formed.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict

from .model import Run

_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def clean(s: object) -> str:
    return _ILLEGAL.sub("\ufffd", str(s))


def render(run: Run) -> str:
    by_rule = defaultdict(list)
    for f in run.by_roi():
        by_rule[f.rule_id].append(f)
    root = ET.Element("testsuites", name="cudamigrate", tests=str(max(1, len(run.findings))),
                      failures=str(len(run.findings)), errors=str(len(run.errors)))
    if not by_rule:
        suite = ET.SubElement(root, "testsuite", name="cudamigrate", tests="1", failures="0",
                              errors=str(len(run.errors)))
        ET.SubElement(suite, "testcase", classname="cudamigrate",
                      name=f"no findings in {run.files_scanned} file(s) for CUDA {run.target_str}")
    for rid in sorted(by_rule):
        fs = by_rule[rid]
        suite = ET.SubElement(root, "testsuite", name=clean(f"{rid} {fs[0].rule_name}"), tests=str(len(fs)),
                              failures=str(len(fs)), errors="0")
        for f in fs:
            case = ET.SubElement(suite, "testcase", classname=clean(f.path), name=clean(f"{rid} {f.path}:{f.line}:{f.column}"),
                                 file=clean(f.path), line=str(f.line))
            fail = ET.SubElement(case, "failure", type=rid, message=clean(f.message))
            roi = f.cost.roi if f.cost else 0
            notes = "".join(f"\n    {r.note()}" for r in f.related)
            fail.text = clean(f"{f.path}:{f.line}:{f.column}: {rid} {f.message}\n"
                              f"severity {f.severity}, fix {f.applicability}, roi {roi:g}\n    | {f.snippet}{notes}")
    if run.errors:
        suite = ET.SubElement(root, "testsuite", name="cudamigrate errors", tests=str(len(run.errors)), failures="0",
                              errors=str(len(run.errors)))
        for i, e in enumerate(run.errors, 1):
            case = ET.SubElement(suite, "testcase", classname="cudamigrate", name=f"error {i}")
            ET.SubElement(case, "error", message=clean(e)).text = clean(e)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
