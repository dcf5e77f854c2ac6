#!/bin/sh
# Installs seqcl's build and run-time dependencies from Debian's packages, then
# configures and builds seqcl in ./build.   Usage: scripts/setup.sh [extra meson options]
# Warnings do not stop the build (no --werror: a newer compiler's new warning
# must not break a user's build); CI and development pass --werror.
set -eu
cd "$(dirname "$0")/.."

PACKAGES="build-essential meson ninja-build pkg-config python3
ocl-icd-opencl-dev opencl-headers libclblast-dev pocl-opencl-icd mesa-opencl-icd oclgrind clinfo
libopenblas-dev libjansson-dev libcmocka-dev python3-numpy python3-pytest python3-nltk"

missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "installing:$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

if [ -d build ]; then
  meson setup --reconfigure build "$@"
else
  meson setup build "$@"
fi
ninja -C build
