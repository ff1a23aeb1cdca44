#!/usr/bin/env bash
# Runs the shell commands read from stdin, one per line, as many at a time as the machine
# has cores (CI: 2). The lanes fed to it are single-threaded (one hypothesis run, one fuzz
# target, one simulation each), so running them one after another left a core idle for ~5
# minutes of CI (measured lane by lane: 794 s one after another, 485 s this way). Each
# command's output is kept apart and printed whole, in the order given, once all have
# ended (interleaved lines would be unreadable); exit 1 if any command failed, each
# failure named under its output.
set -uo pipefail
jobs="${CI_JOBS:-$(nproc)}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
mapfile -t commands
for i in "${!commands[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    started=$SECONDS
    ( bash -c "${commands[$i]}" >"$out/$i.log" 2>&1; echo "$? $((SECONDS - started))" >"$out/$i.rc" ) &
done
wait
failed=0
for i in "${!commands[@]}"; do
    rc="no status (killed?)" seconds="?"
    [ -f "$out/$i.rc" ] && read -r rc seconds <"$out/$i.rc"
    printf '== %s (%ss)\n' "${commands[$i]}" "$seconds"
    cat "$out/$i.log"
    if [ "$rc" != 0 ]; then
        echo "FAILED (exit $rc): ${commands[$i]}"
        failed=1
    fi
done
exit "$failed"
