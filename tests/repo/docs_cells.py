#!/usr/bin/python3
"""The status tables stay readable: every cell of README.md's and docs/status.md's tables
holds at most 320 characters (a sentence or two and a link; the figures live on
docs/results.md). With --self-test, a table with an overlong cell must fail.

Usage: docs_cells.py SOURCE_DIR [--self-test]
"""
import pathlib
import sys

LIMIT = 320
PAGES = ("README.md", "docs/status.md")


def long_cells(text):
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("|"):
            for column, cell in enumerate(line.strip().strip("|").split(" | "), 1):
                if len(cell.strip()) > LIMIT:
                    out.append(f"line {number}, column {column}: {len(cell.strip())} characters")
    return out


def main():
    if "--self-test" in sys.argv[2:]:
        found = long_cells("| a | b |\n| --- | --- |\n| short | " + "x" * (LIMIT + 1) + " |\n")
        if found != [f"line 3, column 2: {LIMIT + 1} characters"]:
            print(f"docs_cells self-test: an overlong cell was not found ({found})")
            return 1
        print("docs_cells self-test: an overlong cell is found")
        return 0
    root = pathlib.Path(sys.argv[1])
    bad = 0
    for page in PAGES:
        for problem in long_cells((root / page).read_text()):
            print(f"{page}: {problem} (at most {LIMIT}: move the details to a guide or results)")
            bad += 1
    print(f"docs_cells: {bad} overlong cells")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
