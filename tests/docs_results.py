#!/usr/bin/python3
"""docs/results.md, the page of measured figures: every section (## heading) opens with the
four fields that date a figure (Recorded: a date and a commit; Machine; Command; Compares),
so a stale number is visibly stale. With --self-test, a section missing a field, or with a
malformed date or commit, must fail.

Usage: docs_results.py REPO_ROOT [--self-test]"""
import pathlib
import re
import sys

FIELDS = ("Recorded", "Machine", "Command", "Compares")
RECORDED = re.compile(r"\d{4}-\d{2}-\d{2} \([0-9a-f]{7,40}\)")


def problems(text):
    out = []
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    if not sections:
        out.append("no sections (## headings)")
    for sec in sections:
        title = sec.splitlines()[0]
        fields = dict(re.findall(r"^- \*\*(\w+)\*\*: (.+)$", sec, flags=re.M))
        for f in FIELDS:
            if not fields.get(f, "").strip():
                out.append(f"section '{title}': no '{f}' field")
        rec = fields.get("Recorded", "")
        if rec and not all(RECORDED.fullmatch(r.strip()) for r in rec.split(" and ")):
            out.append(f"section '{title}': Recorded '{rec}' is not 'YYYY-MM-DD (commit)'")
    return out


def main():
    root = pathlib.Path(sys.argv[1])
    if "--self-test" in sys.argv[2:]:
        bad = ("## Good\n\n- **Recorded**: 2026-11-25 (abc1234)\n- **Machine**: x\n"
               "- **Command**: `c`\n- **Compares**: y\n\n## No command\n\n"
               "- **Recorded**: 2026-11-25 (abc1234)\n- **Machine**: x\n- **Compares**: y\n\n"
               "## Bad date\n\n- **Recorded**: yesterday\n- **Machine**: x\n"
               "- **Command**: `c`\n- **Compares**: y\n")
        found = problems(bad)
        want = ["section 'No command': no 'Command' field",
                "section 'Bad date': Recorded 'yesterday' is not 'YYYY-MM-DD (commit)'"]
        if found != want:
            print(f"docs_results self-test: expected {want}, got {found}")
            return 1
        print("docs_results self-test: a missing field and a bad date are found")
        return 0
    found = problems((root / "docs/results.md").read_text())
    for p in found:
        print(f"docs/results.md: {p}")
    n = len(re.findall(r"^## ", (root / "docs/results.md").read_text(), flags=re.M))
    print(f"docs_results: {n} sections, {len(found)} problems")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
