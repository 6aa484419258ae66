#!/usr/bin/env bash
# Staged output for the long make targets (make test, make deploy-local): one
# line when a step starts, one when it ends (elapsed time, what comes next); the
# step's full output goes to a log file, whose last lines and path are printed
# when the step fails. Test steps also print their result lines (pytest's
# counts, coverage, ansible-lint, molecule) so passing runs still say what ran.
#
# As a library (`. scripts/steps.sh`), from a bash script with `set -e`:
#   steps_begin TITLE NAME...                the run's steps, in order
#   step [--summary ERE] NAME DESCRIPTION COMMAND...
#                                            COMMAND's output into NAME.log; the
#                                            log's lines matching ERE after it
#   step_live NAME DESCRIPTION COMMAND...    COMMAND on the terminal, no log (its
#                                            output is what the run is for)
#   steps_end                                the run's total time
# Call step and step_live as plain commands, not in `if` or `||`: bash ignores
# set -e inside anything run there, and a step's shell function relies on it.
# A failed step ends the script with the step's exit status.
#
# As a command (the Makefile):
#   scripts/steps.sh make TITLE TARGET=DESCRIPTION...   each TARGET a step: $MAKE TARGET
#   Between the specs, a lone '&' starts a second lane that runs alongside the steps before it (back to the
#   previous ';' or the start), and a lone ';' waits for every lane before the steps after it: two cores share a
#   CPU-bound lane (tests, linters) and a lane that mostly waits (molecule's hosts). Each lane runs its steps in
#   order and prints their lines as they come; the run fails when a lane failed, once every lane is done.
#
# Environment: VERBOSE=1 streams every step's output as before, no log files;
# LLAMAFLEET_FULL_LOGS=1 (the default when CI is set: CI keeps only what is
# printed) prints a failed step's whole log instead of its last 40 lines;
# logs go to $LLAMAFLEET_CACHE/logs/TITLE-YYYYmmdd-HHMMSS/ (the newest 20 runs
# of a title are kept; TITLE-latest points at the newest).

steps_title=
steps_dir=
steps_names=()
steps_started=0
_steps_status_pid=
_steps_status_tty=0
_steps_rc=0
# Result lines of pytest (counts, coverage), molecule and ansible-lint.
_steps_results='^=+ .*[0-9]+ (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)\b.* in [0-9.]+s|^=+ no tests ran|Required test coverage|^molecule scenario .*: (passed|FAILED)|^molecule: [0-9]+ scenario|^(Passed|Failed): [0-9]+ failure'

_steps_verbose() { [ -n "${VERBOSE:-}" ] && [ "$VERBOSE" != 0 ]; }

_steps_full_logs() {
  case "${LLAMAFLEET_FULL_LOGS:-}" in
    1|true|yes) return 0 ;;
    0|false|no) return 1 ;;
  esac
  [ -n "${CI:-}" ] && [ "$CI" != false ] && [ "$CI" != 0 ]
}

_steps_time() {
  local s=$1
  if [ "$s" -lt 60 ]; then echo "$s s"; else echo "$((s / 60)) min $((s % 60)) s"; fi
}

_steps_count() {
  if [ ${#steps_names[@]} -eq 1 ]; then echo "1 step"; else echo "${#steps_names[@]} steps"; fi
}

# Paths under $HOME as ~/..., to keep the step lines short.
_steps_short() {
  case "$1" in
    "$HOME"/*) echo "~${1#"$HOME"}" ;;
    *) echo "$1" ;;
  esac
}

# Without ANSI colours and carriage-return redraws, for terminal lines.
_steps_plain() { sed -e 's/.*\r//' -e 's/\x1b\[[0-9;?]*[A-Za-z]//g'; }

steps_begin() {
  local logs slug stamp keep=20 old i
  steps_title=$1
  shift
  steps_names=("$@")
  steps_started=$SECONDS
  # An interrupted run must not leave the status line's loop drawing (unless the caller has its own trap).
  [ -n "$(trap -p EXIT)" ] || trap _steps_status_stop EXIT
  if _steps_verbose; then
    echo "$steps_title: $(_steps_count), output streamed (VERBOSE=1)"
    return 0
  fi
  logs=${LLAMAFLEET_CACHE:-$HOME/.cache/llamafleet}/logs
  slug=${steps_title// /-}
  stamp=$(date +%Y%m%d-%H%M%S)
  mkdir -p "$logs"
  steps_dir="$logs/$slug-$stamp"
  # A second run of the same title in the same second gets its own directory.
  mkdir "$steps_dir" 2>/dev/null || steps_dir=$(mktemp -d "$steps_dir.XXXX")
  ln -sfn "$(basename "$steps_dir")" "$logs/$slug-latest"
  # Timestamped names sort by age: drop all but the newest $keep.
  old=("$logs/$slug"-[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]-[0-9]*)
  for ((i = 0; i < ${#old[@]} - keep; i++)); do
    [ -d "${old[$i]}" ] && rm -rf "${old[$i]}"
  done
  # Step lines name their log by file name only: short enough for an 80-column terminal.
  echo "$steps_title: $(_steps_count); logs in $(_steps_short "$steps_dir")/ (VERBOSE=1 streams them)"
}

# Sets _steps_label ("[3/8]") and _steps_next for step $1 (the next step of its lane, when lanes run).
steps_lane=()
_steps_locate() {
  local i
  _steps_label="[?/${#steps_names[@]}]"
  _steps_next=
  for i in "${!steps_names[@]}"; do
    if [ "${steps_names[$i]}" = "$1" ]; then
      _steps_label="[$((i + 1))/${#steps_names[@]}]"
      _steps_next=${steps_names[$((i + 1))]:-}
    fi
  done
  if [ ${#steps_lane[@]} -gt 0 ]; then
    _steps_next=
    for i in "${!steps_lane[@]}"; do
      if [ "${steps_lane[$i]}" = "$1" ]; then _steps_next=${steps_lane[$((i + 1))]:-}; fi
    done
  fi
}

# COMMAND in a subshell with errexit in force (a shell function stops at its
# first failure); its status goes to _steps_rc, not to the caller's set -e.
# Called as a plain command: in `||` or `if`, bash would ignore the subshell's
# set -e.
_steps_run() {
  local errexit=0
  case $- in *e*) errexit=1 ;; esac
  set +e
  (set -e; "$@")
  _steps_rc=$?
  [ "$errexit" -eq 0 ] || set -e
}

# While a step runs, its log's last line: on a terminal redrawn in place once a
# second, so a cold build or download shows it is moving without adding lines;
# elsewhere (CI, a pipe) a line every 5 minutes, so a long step still prints
# something before a CI's no-output timeout.
_steps_status_start() {
  local log=$1 cols=0 parent=$$
  _steps_status_pid=
  _steps_status_tty=0
  if [ -t 1 ] && [ "${TERM:-dumb}" != dumb ] && [ -z "${_steps_status_tty_off:-}" ]; then
    _steps_status_tty=1
    cols=$(tput cols 2>/dev/null || echo 80)
  fi
  (
    trap 'exit 0' TERM
    seconds=0
    while kill -0 "$parent" 2>/dev/null; do
      # sleep in the background: wait returns at once on TERM, a foreground sleep would not.
      sleep 1 &
      wait $!
      seconds=$((seconds + 1))
      if [ "$cols" -gt 0 ]; then
        line=$(tail -n 1 "$log" 2>/dev/null | _steps_plain)
        printf '\r\033[K      %s' "${line:0:$((cols - 7))}"
      elif [ $((seconds % 300)) -eq 0 ]; then
        line=$(tail -n 1 "$log" 2>/dev/null | _steps_plain)
        echo "      still running after $(_steps_time "$seconds"): ${line:0:100}"
      fi
    done
  ) &
  _steps_status_pid=$!
}

_steps_status_stop() {
  [ -n "$_steps_status_pid" ] || return 0
  kill "$_steps_status_pid" 2>/dev/null || true
  wait "$_steps_status_pid" 2>/dev/null || true
  _steps_status_pid=
  [ "$_steps_status_tty" -eq 0 ] || printf '\r\033[K'
}

# Each step's end, for the recap: NAME, "done" or "FAILED", seconds (lanes are subshells: a file they share).
_steps_record() {
  [ -z "$steps_dir" ] || printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$steps_dir/times.tsv"
}

# Every step's time and result in one place at the end, in the order of the steps: with two lanes, their
# "done in" lines are interleaved above. Steps a failure kept from running say so.
_steps_recap() {
  local name line
  [ -n "$steps_dir" ] && [ ${#steps_names[@]} -gt 1 ] || return 0
  echo "$steps_title: time per step"
  for name in "${steps_names[@]}"; do
    line=$(awk -F '\t' -v n="$name" '$1 == n {print $2 "\t" $3}' "$steps_dir/times.tsv" 2>/dev/null | tail -n 1)
    if [ -z "$line" ]; then
      printf '      %-16s not run\n' "$name"
    else
      printf '      %-16s %s%s\n' "$name" "$(_steps_time "${line#*$'\t'}")" \
        "$([ "${line%%$'\t'*}" = "done" ] || echo ", FAILED")"
    fi
  done
}

_steps_done() {
  local elapsed=$1
  if [ -n "$_steps_next" ]; then
    echo "      done in $(_steps_time "$elapsed"); next: $_steps_next"
  else
    echo "      done in $(_steps_time "$elapsed")"
  fi
}

# The lines of a failed step's log that say what failed (Ansible's fatal and unreachable lines, molecule's
# failed steps, pytest's failures, make's errors): the last 40, each cut to 400 characters. Then the disk and
# memory left: a full disk or an out-of-memory kill shows up as an unreachable host or a killed engine.
_steps_digest() {
  local log=$1 digest line
  digest=$(_steps_plain <"$log" | grep -nE \
    'fatal: |UNREACHABLE!|FAILED!|^FAILED |^ERROR|^CRITICAL|^E   |Error [0-9]+$|Executed: Failed|No space left|Killed|Out of memory' \
    | tail -n 40 | cut -c 1-400) || true
  if [ -n "$digest" ]; then
    echo "      its failure lines (line number: text):"
    while IFS= read -r line; do echo "    $line"; done <<<"$digest"
  fi
  echo "      disk free: $(df -h --output=avail "${LLAMAFLEET_CACHE:-$HOME}" 2>/dev/null | tail -n 1 | tr -d ' ')," \
    "memory available: $(awk '/^MemAvailable:/ {printf "%d MiB", $2 / 1024}' /proc/meminfo 2>/dev/null)"
}

_steps_failed() {
  local name=$1 rc=$2 elapsed=$3 log=${4:-} lines
  _steps_record "$name" FAILED "$elapsed"
  {
    echo "      FAILED: $name (exit $rc after $(_steps_time "$elapsed"))"
    if [ -z "$log" ]; then
      echo "      its output is above"
    elif _steps_full_logs; then
      echo "      its whole log, $(wc -l <"$log") lines:"
      sed 's/^/    /' "$log"
      # A CI that keeps only the end of what was printed still shows why: the log's failure lines come last.
      _steps_digest "$log"
      echo "      FAILED: $name; log: $log"
    else
      lines=$(wc -l <"$log")
      echo "      the last 40 of its $lines log lines:"
      tail -n 40 "$log" | sed 's/^/    /'
      _steps_digest "$log"
      echo "      FAILED: $name; full log: $log"
    fi
  } >&2
  exit "$rc"
}

step() {
  local results=$_steps_results name desc log started
  if [ "$1" = --summary ]; then
    results=$2
    shift 2
  fi
  name=$1 desc=$2
  shift 2
  _steps_locate "$name"
  started=$SECONDS
  if _steps_verbose; then
    echo "$_steps_label $name — $desc"
    _steps_run "$@"
    [ "$_steps_rc" -eq 0 ] || _steps_failed "$name" "$_steps_rc" $((SECONDS - started))
    _steps_done $((SECONDS - started))
    return 0
  fi
  log="$steps_dir/$name.log"
  echo "$_steps_label $name — $desc (log: $name.log)"
  _steps_status_start "$log"
  _steps_run "$@" >"$log" 2>&1 </dev/null
  _steps_status_stop
  [ "$_steps_rc" -eq 0 ] || _steps_failed "$name" "$_steps_rc" $((SECONDS - started)) "$log"
  _steps_record "$name" "done" $((SECONDS - started))
  if [ -n "$results" ]; then
    _steps_plain <"$log" | { grep -E "$results" || true; } | tail -n 20 | sed -e 's/^=* *//' -e 's/ *=*$//' -e 's/^/      /'
  fi
  _steps_done $((SECONDS - started))
}

step_live() {
  local name=$1 desc=$2 started
  shift 2
  _steps_locate "$name"
  started=$SECONDS
  echo "$_steps_label $name — $desc"
  _steps_run "$@"
  [ "$_steps_rc" -eq 0 ] || _steps_failed "$name" "$_steps_rc" $((SECONDS - started))
  _steps_record "$name" "done" $((SECONDS - started))
  _steps_done $((SECONDS - started))
}

steps_end() {
  _steps_recap
  echo "$steps_title: $(_steps_count) done in $(_steps_time $((SECONDS - steps_started)))"
}

# The make steps of one lane, in order: TARGET=DESCRIPTION...; a failed step ends the lane (its subshell).
_steps_make_lane() {
  local spec
  steps_lane=()
  for spec in "$@"; do steps_lane+=("${spec%%=*}"); done
  for spec in "$@"; do
    step "${spec%%=*}" "${spec#*=}" "${MAKE:-make}" --no-print-directory "${spec%%=*}"
  done
}

# One group of lanes (specs separated by '&'): a lone lane runs here; several run side by side, then the group
# fails with the first failed lane's status once all are done.
_steps_make_group() {
  local lanes=() lane=() spec pids=() rc=0 pid status
  for spec in "$@" '&'; do
    if [ "$spec" = '&' ]; then
      [ ${#lane[@]} -eq 0 ] || lanes+=("$(printf '%s\n' "${lane[@]}")")
      lane=()
    else
      lane+=("$spec")
    fi
  done
  if [ ${#lanes[@]} -eq 1 ]; then
    mapfile -t lane <<<"${lanes[0]}"
    _steps_make_lane "${lane[@]}"
    return 0
  fi
  echo "      side by side: $(for l in "${lanes[@]}"; do sed -n 's/=.*//p' <<<"$l" | paste -sd, -; done | paste -sd'|' - | sed 's/|/ | /g')"
  for spec in "${lanes[@]}"; do
    mapfile -t lane <<<"$spec"
    # No redrawn status line: two lanes would draw over each other.
    (_steps_status_tty_off=1; _steps_make_lane "${lane[@]}") &
    pids+=("$!")
  done
  for pid in "${pids[@]}"; do
    status=0
    wait "$pid" || status=$?
    [ "$rc" -ne 0 ] || rc=$status
  done
  [ "$rc" -eq 0 ] || exit "$rc"
}

_steps_main() {
  local title spec names=() group=()
  case "${1:-}" in
    make)
      [ $# -ge 3 ] || { echo "usage: $0 make TITLE TARGET=DESCRIPTION... ['&' | ';' TARGET=DESCRIPTION...]" >&2; exit 2; }
      title=$2
      shift 2
      for spec in "$@"; do
        case "$spec" in '&' | ';') ;; *) names+=("${spec%%=*}") ;; esac
      done
      steps_begin "$title" "${names[@]}"
      # A failed step ends the run: the recap still comes, last (lanes are subshells, which keep no trap).
      trap 'status=$?; _steps_status_stop; [ "$status" -eq 0 ] || _steps_recap >&2' EXIT
      for spec in "$@" ';'; do
        if [ "$spec" = ';' ]; then
          [ ${#group[@]} -eq 0 ] || _steps_make_group "${group[@]}"
          group=()
        else
          group+=("$spec")
        fi
      done
      steps_end
      ;;
    *)
      echo "usage: $0 make TITLE TARGET=DESCRIPTION...  (or source it: see its header)" >&2
      exit 2
      ;;
  esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  _steps_main "$@"
fi
