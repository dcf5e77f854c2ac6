#!/usr/bin/env python3
"""Checks the README's C example: the code block under "## From C" is
examples/c/decode.c verbatim, and the built program (argv[1]) greedy-decodes a
golden fixture's first source line into the PyTorch reference's output.

    check_c_example.py DECODE_BINARY SOURCE_ROOT

Used by the test suite (the program built with the library) and by
scripts/install-check.sh (the program built against an installed seqcl)."""
import difflib
import os
import subprocess
import sys

# Decisions in this fixture are at least 3e-3 from a tie (tests/golden/README.md),
# so every device gives the reference's output exactly.
FIXTURE = "tests/golden/bi1_additive_seed000_bridge_ctx"


def readme_block(readme):
    lines = open(readme, encoding="utf-8").read().split("\n")
    start = lines.index("## From C")
    begin = lines.index("```c", start) + 1
    end = lines.index("```", begin)
    return "\n".join(lines[begin:end]) + "\n"


def main():
    binary, root = sys.argv[1], sys.argv[2]
    failed = False

    code = open(os.path.join(root, "examples/c/decode.c"), encoding="utf-8").read()
    block = readme_block(os.path.join(root, "README.md"))
    if block != code:
        failed = True
        print("README.md's \"From C\" block differs from examples/c/decode.c:")
        sys.stdout.writelines(difflib.unified_diff(
            block.splitlines(True), code.splitlines(True), "README.md", "examples/c/decode.c"))

    fixture = os.path.join(root, FIXTURE)
    src = open(os.path.join(fixture, "src.txt")).readline().split()
    want = open(os.path.join(fixture, "greedy.txt")).readline().split()
    devices = [os.environ["SEQCL_DEVICE"]] if os.environ.get("SEQCL_DEVICE") else ["cpu", "auto"]
    for device in devices:
        env = dict(os.environ, SEQCL_DEVICE=device)
        run = subprocess.run([binary, fixture] + src, env=env, capture_output=True, text=True)
        got = run.stdout.split()
        if run.returncode != 0 or got != want:
            failed = True
            print(f"{binary} on {device}: exit status {run.returncode}, output {got} "
                  f"(want 0, {want}); stderr: {run.stderr.strip()}")
        else:
            print(f"{device}: {' '.join(src)} -> {' '.join(got)} (as the reference)")

    # A bad argument is reported, not crashed on.
    run = subprocess.run([binary, fixture, "1", "x"], capture_output=True, text=True)
    if run.returncode != 2 or "not a token id: 'x'" not in run.stderr:
        failed = True
        print(f"{binary} with the id 'x': exit status {run.returncode} (want 2), "
              f"stderr '{run.stderr.strip()}'")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
