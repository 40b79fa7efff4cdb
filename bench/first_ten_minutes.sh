#!/usr/bin/env bash
# The first ten minutes (issue 50): the README's commands from a fresh clone of this checkout's
# HEAD, timed by phase. Prints one line of figures; say how loaded the machine was next to them.
#
#   bash bench/first_ten_minutes.sh quickstart          # install (pip as set up here) + study
#                                                       # (the tiny model built afresh)
#   bash bench/first_ten_minutes.sh quickstart --cold   # install with a fresh, empty pip cache
#                                                       # and no local mirror: every wheel from
#                                                       # the index (torch from --find-links)
#   bash bench/first_ten_minutes.sh tests               # install + the fast tier
#   bash bench/first_ten_minutes.sh ci                  # .ci/run: install, lint, types, both tiers
set -uo pipefail
what=${1:?quickstart, tests or ci}
cold=${2:-}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/first-ten-minutes-XXXX)
git clone -q "$here" "$work/repo" && cd "$work/repo" || exit 1
now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc; }
# CPU seconds (user + system) of a command and of the processes it waited for: on a shared
# machine the wall time depends on the others' load, the CPU time much less.
cpu() { /usr/bin/time -f "%U %S" -o "$work/cpu.txt" "$@"; }
cpu_secs() { awk 'END { print $1 + $2 }' "$work/cpu.txt"; }

install() {
  python3 -m venv .venv || return 1
  if [ "$cold" = "--cold" ]; then
    # --isolated: no pip config, no PIP_* variables (the local mirror and find-links); the
    # torch CPU wheel is still taken from TORCH_WHEELS (default /opt/wheels) when it exists.
    local links=${TORCH_WHEELS:-/opt/wheels}
    PIP_CACHE_DIR="$work/pip-cache" .venv/bin/pip --isolated install -q \
      ${links:+--find-links "$links"} 'torch==2.13.0' -e ".[$1]"
  else
    .venv/bin/pip install -q 'torch==2.13.0' -e ".[$1]"
  fi
}

s=$(now)
case "$what" in
  quickstart)
    install quickstart 2>&1 | grep -v 'Location.*ignored'
    i=$(now)
    # A newcomer's first run: the tiny model is built, not taken from an earlier run's cache.
    AUTOTUNE_CACHE_DIR="$work/autotune-cache" \
      .venv/bin/autotune start --space search_spaces/quickstart.yaml > "$work/out.txt" 2>&1
    rc=$?
    e=$(now)
    tail -8 "$work/out.txt"
    echo "quickstart${cold:+ $cold}: rc=$rc install=$(secs "$s" "$i")s study=$(secs "$i" "$e")s total=$(secs "$s" "$e")s ($work)"
    ;;
  tests)
    install quickstart,test 2>&1 | grep -v 'Location.*ignored'
    i=$(now)
    cpu .venv/bin/python -m pytest -q -p no:cacheprovider > "$work/out.txt" 2>&1
    rc=$?
    e=$(now)
    tail -3 "$work/out.txt"
    echo "fast tier${cold:+ $cold}: rc=$rc install=$(secs "$s" "$i")s tests=$(secs "$i" "$e")s (cpu $(cpu_secs)s) total=$(secs "$s" "$e")s ($work)"
    ;;
  ci)
    cpu bash .ci/run > "$work/out.txt" 2>&1
    rc=$?
    e=$(now)
    grep '^== ' "$work/out.txt"
    tail -3 "$work/out.txt"
    echo "ci: rc=$rc total=$(secs "$s" "$e")s (cpu $(cpu_secs)s) ($work)"
    ;;
  *) echo "quickstart, tests or ci" >&2; exit 2 ;;
esac
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
