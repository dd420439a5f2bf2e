#!/usr/bin/env bash
# Pack this machine's gdb with the libraries it loads (but glibc's own, which the device
# machine has) into .carry/gdb.tar.xz, for a device call that needs backtraces (the device
# machines have no gdb): carry it, source bench/tp-env.sh (which unpacks it to .carry/gdb.tar),
# then `tar xf .carry/gdb.tar -C /tmp` and run
# `env LD_LIBRARY_PATH=/tmp/gdbb/lib /tmp/gdbb/gdb ...` (~22 MB xz'd).
set -euo pipefail
d=$(mktemp -d)
mkdir -p "$d/gdbb/lib"
cp "$(command -v gdb)" "$d/gdbb/"
for l in $(ldd "$(command -v gdb)" | awk '/=>/ {print $3}'); do
  case $(basename "$l") in
    libc.so.* | libm.so.* | libpthread.so.* | libresolv.so.* | libdl.so.* | ld-linux*) ;;
    *) cp -L "$l" "$d/gdbb/lib/" ;;
  esac
done
mkdir -p .carry
tar cf - -C "$d" gdbb | xz -T0 -6 > .carry/gdb.tar.xz
rm -rf "$d"
ls -la .carry/gdb.tar.xz
