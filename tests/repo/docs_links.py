#!/usr/bin/python3
"""Every link between hpdl's documents resolves: each relative link in README.md and
docs/*.md names a file that exists, and each #anchor a heading of that file (GitHub's
slugs). With --self-test, a page with a broken file link and a broken anchor must fail.

Usage: docs_links.py SOURCE_DIR [--self-test]
"""
import os
import re
import sys
import tempfile

LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    out = set()
    in_code = False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            out.add(slug(line.lstrip("#")))
    return out


def broken(pages):
    bad = []
    for page in pages:
        text = open(page, encoding="utf-8").read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)  # links inside code are not links
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target):
                continue  # http:, https:, mailto:
            file, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), file)) if file else page
            if not os.path.exists(dest):
                bad.append(f"{page}: {target}: no such file")
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                bad.append(f"{page}: {target}: no heading #{anchor} in {dest}")
    return bad


def pages_of(root):
    docs = os.path.join(root, "docs")
    return [os.path.join(root, "README.md")] + sorted(
        os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))


root = sys.argv[1]
if len(sys.argv) > 2 and sys.argv[2] == "--self-test":
    with tempfile.TemporaryDirectory() as tmp:
        page = os.path.join(tmp, "page.md")
        open(page, "w").write("# Title\n\n[ok](#title) [gone](nowhere.md) [anchor](page.md#missing)\n")
        found = broken([page])
        assert len(found) == 2, found
    print("self-test: a missing file and a missing anchor are found")
    sys.exit(0)
pages = pages_of(root)
bad = broken(pages)
if bad:
    print("\n".join(bad))
    sys.exit(1)
links = sum(len(LINK.findall(re.sub(r"```.*?```", "", open(p).read(), flags=re.S))) for p in pages)
print(f"{links} links in {len(pages)} pages resolve")
