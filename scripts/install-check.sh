#!/bin/bash
# Installs a build into a temporary folder (meson install --destdir, as a
# packager stages it) and builds the README's C example, examples/c/decode.c,
# the way a user does: cc decode.c $(pkg-config --cflags --libs seqcl), against
# the installed headers, seqcl.pc and libseqcl.so alone. Runs it on a golden
# fixture (tests/examples/check_c_example.py, which also checks that the README
# shows the file as it is), then does the same through the build's
# seqcl-uninstalled.pc. The build folder itself is left as it is.
#
#   scripts/install-check.sh [BUILD_DIR]     (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${1:-build}
[ -f "$build/build.ninja" ] || { echo "install-check: no configured build in '$build'" >&2; exit 2; }
cc=${CC:-cc}
stage=$(mktemp -d "${TMPDIR:-/tmp}/seqcl-install.XXXXXX")
trap 'rm -rf "$stage"' EXIT

# The build's install locations (absolute: prefix, and the folders under it).
read -r prefix libdir includedir bindir < <(meson introspect --buildoptions "$build" | python3 -c '
import json, os, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
p = o["prefix"]
print(p, *(os.path.join(p, o[k]) for k in ("libdir", "includedir", "bindir")))')

meson install -C "$build" --destdir "$stage/root" --quiet >"$stage/install.log" 2>&1 ||
  { cat "$stage/install.log"; exit 1; }
dest=$stage/root
for f in "$libdir/libseqcl.so" "$libdir/pkgconfig/seqcl.pc" "$includedir/seqcl/seqcl.h" "$bindir/seqcl"; do
  [ -e "$dest$f" ] || { echo "install-check: $f was not installed" >&2; exit 1; }
done
"$dest$bindir/seqcl" --version

# The staged .pc still says prefix=$prefix; pkg-config's sysroot puts the
# staging folder in front of its -I and -L paths.
flags=$(PKG_CONFIG_PATH="$dest$libdir/pkgconfig" \
        PKG_CONFIG_SYSROOT_DIR="$dest" pkg-config --cflags --libs seqcl)
echo "installed: pkg-config --cflags --libs seqcl: $flags"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror examples/c/decode.c $flags -o "$stage/decode"
# The program must find the staged library, not one installed elsewhere.
# (ldd's output is read whole first: `ldd | grep -q` under pipefail fails
# whenever grep exits before ldd has written everything.)
resolved=$(LD_LIBRARY_PATH="$dest$libdir" ldd "$stage/decode")
grep -q "libseqcl.so.* => $dest$libdir/" <<<"$resolved" ||
  { echo "install-check: decode does not resolve libseqcl.so into $dest$libdir:" >&2
    echo "$resolved" >&2; exit 1; }
LD_LIBRARY_PATH="$dest$libdir" python3 tests/examples/check_c_example.py "$stage/decode" "$root"

# seqcl-uninstalled.pc: the source tree's include/ and the build's library.
# The Python package: installed into site-packages next to _install.py (which
# names the final libdir; the staged copy is reached through SEQCL_LIBRARY).
pkg=$(find "$dest" -path '*/seqcl/__init__.py' | head -n 1)
[ -n "$pkg" ] && [ -f "$(dirname "$pkg")/_install.py" ] ||
  { echo "install-check: the Python package seqcl was not installed" >&2; exit 1; }
grep -q "LIBDIR = \"$libdir\"" "$(dirname "$pkg")/_install.py" ||
  { echo "install-check: seqcl/_install.py does not name $libdir" >&2; exit 1; }
py=""
for cand in python3 /usr/bin/python3; do
  if "$cand" -c 'import numpy' 2>/dev/null; then py=$cand; break; fi
done
if [ -n "$py" ]; then
  (cd "$stage" && PYTHONPATH="$(dirname "$(dirname "$pkg")")" SEQCL_LIBRARY="$dest$libdir/libseqcl.so" \
    "$py" -c 'import sys, seqcl; m = seqcl.Model.load(sys.argv[1], "cpu"); print("installed Python package:", seqcl.__file__, m.decode([[1, 2, 3]]).tokens)' \
    "$root/tests/golden/uni1_additive_zeros_state")
else
  echo "install-check: no Python with numpy here; the installed package was not imported"
fi

export PKG_CONFIG_PATH="$build/meson-uninstalled"
flags=$(pkg-config --cflags --libs seqcl)
echo "uninstalled: pkg-config --cflags --libs seqcl: $flags"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror examples/c/decode.c $flags -o "$stage/decode-uninstalled"
libs=$(pkg-config --libs-only-L seqcl | sed 's/^ *-L//; s/ *$//')
LD_LIBRARY_PATH="$libs" python3 tests/examples/check_c_example.py "$stage/decode-uninstalled" "$root"
echo "install-check: passed"
