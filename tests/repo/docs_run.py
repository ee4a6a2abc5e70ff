#!/usr/bin/python3
"""The documents' runnable examples run: every ```sh runnable block of README.md and
docs/*.md is executed with bash (errexit, pipefail) in a scratch directory that looks like
the repository root to it (build/, inputs/, data/, jobs/, scripts/ and profiling/ linked in,
outputs/ its own), so a renamed flag, key or file fails CI. The blocks are written to be
short (a few steps on the data scripts/setup.sh prepared). With --self-test, a page whose
block uses an unknown flag must fail.

Usage: docs_run.py SOURCE_DIR BUILD_DIR [--self-test]
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

LINKED = ("inputs", "data", "jobs", "scripts", "profiling")
BLOCK = re.compile(r"^```sh runnable\n(.*?)^```", flags=re.S | re.M)


def blocks(pages):
    for page in pages:
        text = open(page, encoding="utf-8").read()
        for m in BLOCK.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            yield page, line, m.group(1)


def run_block(source, build, code):
    work = tempfile.mkdtemp(prefix="hpdl_docs_")
    try:
        os.symlink(build, os.path.join(work, "build"))
        for name in LINKED:
            os.symlink(os.path.join(source, name), os.path.join(work, name))
        env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
        t0 = time.time()
        p = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=work, env=env,
                           capture_output=True, text=True, timeout=600)
        return p.returncode, p.stdout + p.stderr, time.time() - t0
    except subprocess.TimeoutExpired:
        return 124, "still running after 600 s", 600.0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    source, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if not os.path.isdir(os.path.join(source, "data")):
        print("SKIP: no data/ (scripts/setup.sh prepares it)")
        return 77
    if len(sys.argv) > 3 and sys.argv[3] == "--self-test":
        with tempfile.TemporaryDirectory() as tmp:
            page = os.path.join(tmp, "bad.md")
            with open(page, "w") as f:
                f.write("```sh runnable\nbuild/hpdl check inputs/har_2x2.toml --no-such-flag\n```\n")
            rc, _, _ = run_block(source, build, next(blocks([page]))[2])
        if rc == 0:
            print("FAIL: a block with an unknown flag ran")
            return 1
        print("self-test: a block with an unknown flag fails")
        return 0
    pages = [os.path.join(source, "README.md")] + sorted(glob.glob(os.path.join(source, "docs/*.md")))
    failed, count = 0, 0
    for page, line, code in blocks(pages):
        count += 1
        where = f"{os.path.relpath(page, source)}:{line}"
        rc, out, took = run_block(source, build, code)
        print(f"{'ok  ' if rc == 0 else 'FAIL'} {where} ({took:.1f} s)")
        if rc != 0:
            failed += 1
            print("\n".join("    " + l for l in out.strip().split("\n")[-15:]))
    print(f"{count - failed} of {count} runnable blocks ran")
    return 1 if failed or count == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
