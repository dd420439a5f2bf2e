#!/usr/bin/env bash
# Unpack the binaries carried xz-compressed (`.carry/NAME.xz`, to fit the device tool's
# transfer) beside themselves as executables; nothing to do without any. Sourced by the GPU
# scripts that run carried binaries (multi-scaling.sh, halo-ab.sh).
compgen -G ".carry/*.xz" > /dev/null && python3 -c 'import lzma, os, sys
for f in sys.argv[1:]:
    open(f[:-3], "wb").write(lzma.open(f).read()); os.chmod(f[:-3], 0o755)' .carry/*.xz
true
