#!/usr/bin/python3
"""docs/results.md (one section per question) and docs/history.md (the before/after diary):
every measurement opens with the four fields that date a figure (Recorded: a date and a
commit; Machine; Command; Compares), so a stale number is visibly stale. A measurement is a
### subsection, or a ## section that has none. With --self-test, a measurement missing a
field, or with a malformed date or commit, must fail.

Usage: docs_results.py REPO_ROOT [--self-test]"""
import pathlib
import re
import sys

FIELDS = ("Recorded", "Machine", "Command", "Compares")
RECORDED = re.compile(r"\d{4}-\d{2}-\d{2} \([0-9a-f]{7,40}\)")
PAGES = ("docs/results.md", "docs/history.md")


def measurements(text):
    """(title, body) of each measurement: the ### subsections of a ## section, or the section."""
    out = []
    for sec in re.split(r"^## ", text, flags=re.M)[1:]:
        subs = re.split(r"^### ", sec, flags=re.M)
        if len(subs) == 1:
            out.append((sec.splitlines()[0], sec))
        out += [(sub.splitlines()[0], sub) for sub in subs[1:]]
    return out


def problems(text):
    out = []
    found = measurements(text)
    if not found:
        out.append("no sections (## headings)")
    for title, body in found:
        fields = dict(re.findall(r"^- \*\*(\w+)\*\*: (.+)$", body, flags=re.M))
        for f in FIELDS:
            if not fields.get(f, "").strip():
                out.append(f"section '{title}': no '{f}' field")
        rec = fields.get("Recorded", "")
        if rec and not all(RECORDED.fullmatch(r.strip()) for r in rec.split(" and ")):
            out.append(f"section '{title}': Recorded '{rec}' is not 'YYYY-MM-DD (commit)'")
    return out


def self_test():
    fields = "- **Recorded**: 2026-11-25 (abc1234)\n- **Machine**: x\n- **Command**: `c`\n"
    bad = (f"## Good\n\n{fields}- **Compares**: y\n\n## A question\n\nIts answer.\n\n"
           f"### Good part\n\n{fields}- **Compares**: y\n\n### No command\n\n"
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


def main():
    root = pathlib.Path(sys.argv[1])
    if "--self-test" in sys.argv[2:]:
        return self_test()
    failed = 0
    for page in PAGES:
        text = (root / page).read_text()
        found = problems(text)
        for p in found:
            print(f"{page}: {p}")
        print(f"docs_results: {page}: {len(measurements(text))} measurements, {len(found)} problems")
        failed += len(found)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
