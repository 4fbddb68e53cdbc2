#!/usr/bin/env bash
# A plan with the harness in a container and its engines native on the host, started by the
# host-side shim (docs/shim.md): `make track-cpu COMPOSE=1 SHIM=1` runs this for tracks/cpu-shim.yaml,
# `make track-m COMPOSE=1` for Track M's own plan with SHIM_VIA=1.
#
#   scripts/shim-track.sh PLAN [harness track options...]
#
# 1. the shim's allow-list from PLAN's engine definitions (harness setup shim-allow, on the host: the
#    programs it names are the host's), with the options that shape the plan (--tier, --rehearse,
#    --quick, --smoke, --set);
# 2. the shim, on the host's system python3, bound to the address the containers reach (auto);
# 3. `harness track PLAN` in the harness container (compose/shim.yaml), told where the shim and the
#    engines are (host.docker.internal) and where its token file is;
# 4. the shim stopped (it stops every engine it started), whatever the run's outcome; then the
#    proof that nothing is left: no container of the project, the shim's port free.
#
# SHIM_VIA=1: a track's own plan (Track M) with `--via-shim`: every engine whose definition has a
# shim section goes through the shim, and the container (service harness-host-paths) sees the host's
# paths: this checkout at its own path, the model library at SHIM_LIBRARY, HOME the host's; the
# preflight and measure ask the shim about the host's memory (HARNESS_SHIM_URL).
# --dry-run prints the commands and the plan's (harness track --dry-run) and starts nothing.
#
# Environment: SHIM_PORT (8790), SHIM_LIBRARY (the checkout's models/), PROJECT (llm-harness-shim),
# HARNESS (.venv/bin/harness; may be a command of several words), PYTHON (python3), SHIM_BIND (auto),
# SHIM_STATE (runs/shim), SHIM_VIA (empty), HARNESS_IMAGE (llm-harness/harness:local).
set -euo pipefail
cd "$(dirname "$0")/.."
plan=${1:?usage: scripts/shim-track.sh PLAN [harness track options...]}
shift
port=${SHIM_PORT:-8790}
library=${SHIM_LIBRARY:-$PWD/models}
project=${PROJECT:-llm-harness-shim}
image=${HARNESS_IMAGE:-llm-harness/harness:local}
harness=${HARNESS:-.venv/bin/harness}
if [ -z "${HARNESS:-}" ] && [ ! -x "$harness" ]; then  # no .venv: the harness image writes the allow-list
  harness="docker run --rm -u $(id -u):$(id -g) -e HOME=$HOME -e PYTHONPATH=/src -v $PWD/harness:/src/harness:ro
    -v $PWD/runs:/app/runs -w /app $image harness"
fi
python=${PYTHON:-python3}
state=${SHIM_STATE:-runs/shim}  # under runs/: the container sees it at the same relative path
compose=(docker-compose -p "$project" -f compose/shim.yaml)
via=${SHIM_VIA:-}
# The options that shape the plan go to shim-allow too, so that its allow-list is this run's plan.
shape=() dry=
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    --rehearse | --quick | --smoke) shape+=("${args[i]}") ;;
    --tier | --set) shape+=("${args[i]}" "${args[i + 1]:-}") && i=$((i + 1)) ;;
    --dry-run) dry=1 ;;
  esac
done
if [ -n "$via" ]; then
  shape+=(--via-shim)
  service=harness-host-paths
  case $state in /*) token=$state/token ;; *) token=$PWD/$state/token ;; esac
  where=(-e "HARNESS_SHIM_URL=http://host.docker.internal:$port" -e "HARNESS_SHIM_TOKEN_FILE=$token")
  track=(harness track "$plan" --via-shim "$@")
  export HOST_CHECKOUT=$PWD HOST_HOME=$HOME SHIM_LIBRARY=$library
else
  service=harness
  where=()
  track=(harness track "$plan" --set "SHIM_URL=http://host.docker.internal:$port"
    --set SHIM_HOST=host.docker.internal --set "SHIM_TOKEN_FILE=$state/token" "$@")
fi
run=("${compose[@]}" run --rm "${where[@]}" "$service" "${track[@]}")
serve=("$python" shim/harness_shim.py serve --allow "$state/allow.json" --library "$library" --port "$port"
  --state-dir "$state" --bind "${SHIM_BIND:-auto}")
if [ -n "$dry" ]; then
  echo "==> would run: $harness setup shim-allow $plan ${shape[*]} --out $state/allow.json --library $library"
  echo "==> would run: ${serve[*]}"
  echo "==> would run: HOST_UID=$(id -u) HOST_GID=$(id -g) ${run[*]}"
  echo "==> the plan's commands (harness track --dry-run; nothing started):"
  if [ -n "$via" ]; then
    exec env HARNESS_SHIM_HOST=host.docker.internal "HARNESS_SHIM_URL=http://host.docker.internal:$port" \
      $harness track "$plan" --via-shim "$@"
  fi
  exec $harness "${track[@]:1}"
fi
if ! docker image inspect "$image" >/dev/null 2>&1; then
  echo "error: the harness image $image is not here; build it with make images" >&2
  exit 2
fi

mkdir -p "$state"
$harness setup shim-allow "$plan" "${shape[@]}" --out "$state/allow.json" --library "$library"
rm -f "$state/token"
"${serve[@]}" >"$state/stdout.txt" 2>&1 &
shim=$!
stop_shim() {
  if kill -0 "$shim" 2>/dev/null; then kill -TERM "$shim"; wait "$shim" || true; fi
  "${compose[@]}" down --remove-orphans >/dev/null 2>&1 || true
}
trap stop_shim EXIT
for _ in $(seq 100); do
  if [ -s "$state/token" ] && grep -q listening "$state/stdout.txt"; then break; fi
  if ! kill -0 "$shim" 2>/dev/null; then cat "$state/stdout.txt" >&2; exit 1; fi
  sleep 0.2
done
head -1 "$state/stdout.txt"
bound=$(sed -n 's|.*listening on http://\([^ ]*\):[0-9]* .*|\1|p' "$state/stdout.txt" | head -1)

status=0
HOST_UID=$(id -u) HOST_GID=$(id -g) "${run[@]}" || status=$?

stop_shim
trap - EXIT
tail -n +2 "$state/stdout.txt" | grep -v ' /v1/' || true
left=$(docker ps -aq --filter "label=com.docker.compose.project=$project")
if [ -n "$left" ]; then echo "FAIL: containers of $project left: $left" >&2; status=1; fi
if "$python" - "$bound" "$port" <<'PY'
import socket, sys
s = socket.socket()
s.settimeout(0.5)
sys.exit(0 if s.connect_ex((sys.argv[1], int(sys.argv[2]))) != 0 else 1)
PY
then echo "==> shim stopped; nothing left: no container of $project, port $port free"; else
  echo "FAIL: the shim's port $port is still in use" >&2; status=1; fi
exit $status
