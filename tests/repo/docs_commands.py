#!/usr/bin/python3
"""The commands in hpdl's documents still exist: in every ```sh block of README.md and
docs/*.md, each `hpdl SUBCOMMAND` line's flags must be ones that `hpdl SUBCOMMAND --help`
lists, and each `--set key=value` key's last part must be a key the config reader or model
builder reads (src/config/read_sections.cpp, src/builder/builder.cpp) under a known section. So a
renamed flag or config key fails CI. With --self-test, a page with an unknown flag and an
unknown key must fail.

Usage: docs_commands.py SOURCE_DIR HPDL [--self-test]
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

SUBCOMMANDS = {"train", "time", "eval", "check", "convert", "calibrate", "predict", "compare",
               "trace"}
SECTIONS = {"run", "data", "model", "optimizer", "train", "checkpoint", "distributed", "profile"}


def parser_keys(root):
    keys = set()
    for f in ("src/config/read_sections.cpp", "src/config/kernel_choices.cpp", "src/builder/builder.cpp"):
        text = open(os.path.join(root, f)).read()
        keys |= set(re.findall(r'(?:get_[a-z_]*|read|read_bool)\("([a-z_0-9]+)"', text))
    return keys


def shell_lines(page):
    text = open(page, encoding="utf-8").read()
    for block in re.findall(r"```sh[^\n]*\n(.*?)```", text, flags=re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.split("\n"):
            line = line.split(" # ")[0].split("  #")[0].strip()
            if line and not line.startswith("#"):
                yield line


def help_flags(hpdl, sub, cache={}):
    if sub not in cache:
        out = subprocess.run([hpdl] + sub.split() + ["--help"], capture_output=True, text=True).stdout
        cache[sub] = set(re.findall(r"(--[a-z][a-z0-9-]*)", out))
    return cache[sub]


def check(pages, hpdl, keys):
    bad, commands = [], 0
    for page in pages:
        for line in shell_lines(page):
            for part in re.split(r"\s*(?:;|&&|\|\|?)\s*", line):
                try:
                    words = shlex.split(part)
                except ValueError:
                    continue
                at = next((i for i, w in enumerate(words) if w.endswith("/hpdl") or w == "hpdl"), None)
                if at is None or at + 1 >= len(words) or words[at + 1] not in SUBCOMMANDS:
                    continue
                sub = words[at + 1]
                rest = words[at + 2:]
                if sub == "trace" and rest and rest[0] in ("summary", "merge"):
                    sub, rest = "trace " + rest[0], rest[1:]
                commands += 1
                flags = help_flags(hpdl, sub)
                for i, w in enumerate(rest):
                    if w.startswith("--") and i > 0 and rest[i - 1] == "--set":
                        continue
                    flag = w.split("=")[0]
                    if flag.startswith("--") and flag not in flags:
                        bad.append(f"{page}: hpdl {sub}: no option {flag} ({part})")
                    if w == "--set" and i + 1 < len(rest):
                        key = rest[i + 1].split("=")[0]
                        parts = [p for p in key.split(".") if not p.isdigit()]
                        if parts[0] not in SECTIONS or parts[-1] not in keys:
                            bad.append(f"{page}: hpdl {sub}: no config key {key} ({part})")
    return bad, commands


def pages_of(root):
    docs = os.path.join(root, "docs")
    return [os.path.join(root, "README.md")] + sorted(
        os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))


root, hpdl = sys.argv[1], sys.argv[2]
keys = parser_keys(root)
if len(sys.argv) > 3 and sys.argv[3] == "--self-test":
    with tempfile.TemporaryDirectory() as tmp:
        page = os.path.join(tmp, "page.md")
        open(page, "w").write("```sh\nbuild/hpdl train a.toml --set train.batch=4\n"
                              "mpirun -np 2 build/hpdl train a.toml --no-such-flag \\\n"
                              "    --set optimizer.lrr=0.1\n```\n")
        bad, n = check([page], hpdl, keys)
        assert n == 2 and len(bad) == 2, (n, bad)
    print("self-test: an unknown flag and an unknown config key are found")
    sys.exit(0)
bad, n = check(pages_of(root), hpdl, keys)
if bad:
    print("\n".join(bad))
    sys.exit(1)
print(f"{n} hpdl commands in the documents' shell blocks use existing options and config keys")
