#!/usr/bin/env bash
# A Docker engine where the machine allows it, and the local base image every Dockerfile here
# starts from (nothing is ever pulled: no registry is assumed reachable).
#
#   scripts/docker-engine.sh            start (if none answers) + base image   (the default)
#   scripts/docker-engine.sh start      install docker.io/docker-compose/debootstrap if missing
#                                       (root, apt), start dockerd without systemd if none answers
#   scripts/docker-engine.sh base       debootstrap + docker import -> $BASE_IMAGE (skipped when
#                                       the tag exists with the same inputs hash)
#   scripts/docker-engine.sh stop       stop the dockerd THIS script started (by its pid file)
#   scripts/docker-engine.sh status     whether an engine answers, and who started it
#
# The daemon this script starts gets HTTP(S)_PROXY pointing at a closed loopback port, so a pull
# (a missing image, a `FROM` that is not local) fails at once instead of reaching outward. The
# proxy is the daemon's only: builds and containers reach the network as the host does.
#
# The base image carries the host's CA bundle, apt sources/configuration (any proxy or auth conf
# included) and global pip configuration, so `apt-get` and `pip` inside builds reach the mirrors
# exactly as the host does. It therefore holds whatever the host's apt auth files hold: keep it
# local, never push it.
set -euo pipefail

STATE_DIR=${DOCKER_ENGINE_STATE:-/var/lib/llm-harness-docker}
PIDFILE=$STATE_DIR/dockerd.pid
LOG=$STATE_DIR/dockerd.log
WAIT_S=${DOCKER_ENGINE_WAIT:-30}
CLOSED_PROXY=http://127.0.0.1:9   # discard port: nothing listens, connections are refused at once

log() { echo "docker-engine: $*" >&2; }
die() { log "$*"; exit 1; }

host_release() {
    # The Debian release the host runs (bookworm, trixie, ...), which the base image follows.
    . /etc/os-release
    echo "${VERSION_CODENAME:-bookworm}"
}

RELEASE=${BASE_RELEASE:-$(host_release)}
BASE_IMAGE=${BASE_IMAGE:-llm-harness/base:$RELEASE}

answers() { timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

install_packages() {
    local missing=()
    command -v dockerd >/dev/null || missing+=(docker.io)
    command -v docker-compose >/dev/null || missing+=(docker-compose)
    command -v debootstrap >/dev/null || missing+=(debootstrap)
    [ ${#missing[@]} = 0 ] && return 0
    [ "$(id -u)" = 0 ] || die "missing ${missing[*]}; install them as root (apt-get install ${missing[*]})"
    command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get here: install them by hand"
    log "installing ${missing[*]} (apt)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

start() {
    if answers; then
        log "an engine answers already (server $(docker version --format '{{.Server.Version}}')); not starting one"
        return 0
    fi
    install_packages
    answers && return 0
    [ "$(id -u)" = 0 ] || die "no Docker engine answers and starting one needs root"
    mkdir -p "$STATE_DIR"
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
        log "dockerd $(cat "$PIDFILE") (ours) is running but not answering yet; waiting"
    else
        # A daemon killed uncleanly leaves its own pid file and socket behind; dockerd refuses to
        # start over a live pid file but clears a stale one itself.
        log "starting dockerd (log $LOG, pid file $PIDFILE)"
        local t0=$SECONDS
        HTTP_PROXY=$CLOSED_PROXY HTTPS_PROXY=$CLOSED_PROXY http_proxy=$CLOSED_PROXY https_proxy=$CLOSED_PROXY \
        NO_PROXY= no_proxy= \
            setsid dockerd >>"$LOG" 2>&1 </dev/null &
        echo $! >"$PIDFILE"
    fi
    local i
    for ((i = 0; i < WAIT_S * 2; i++)); do
        if answers; then
            log "dockerd answers after $(( SECONDS - ${t0:-$SECONDS} )) s (server $(docker version --format '{{.Server.Version}}'))"
            return 0
        fi
        kill -0 "$(cat "$PIDFILE")" 2>/dev/null || { tail -n 20 "$LOG" >&2; die "dockerd exited; see $LOG"; }
        sleep 0.5
    done
    tail -n 20 "$LOG" >&2
    die "dockerd did not answer within ${WAIT_S} s; see $LOG"
}

stop() {
    if [ ! -f "$PIDFILE" ]; then
        log "no pid file ($PIDFILE): this script started no dockerd; nothing stopped"
        return 0
    fi
    local pid
    pid=$(cat "$PIDFILE")
    if ! kill -0 "$pid" 2>/dev/null || [ "$(cat /proc/"$pid"/comm 2>/dev/null)" != dockerd ]; then
        log "dockerd $pid is not running; removing the stale pid file"
        rm -f "$PIDFILE"
        return 0
    fi
    log "stopping dockerd $pid"
    kill -TERM "$pid"
    local i
    for ((i = 0; i < 60; i++)); do
        kill -0 "$pid" 2>/dev/null || { rm -f "$PIDFILE"; log "stopped"; return 0; }
        sleep 0.5
    done
    log "dockerd $pid did not stop in 30 s; sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$PIDFILE"
}

status() {
    if answers; then
        echo "engine: answers (server $(docker version --format '{{.Server.Version}}'))"
    else
        echo "engine: none answers"
    fi
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
        echo "started by this script: dockerd $(cat "$PIDFILE") (log $LOG)"
    fi
    local id
    if id=$(docker image inspect "$BASE_IMAGE" --format '{{.Id}} inputs={{index .Config.Labels "org.llm-harness.base.inputs"}}' 2>/dev/null); then
        echo "base: $BASE_IMAGE $id"
    else
        echo "base: $BASE_IMAGE absent"
    fi
}

# --- the base image -----------------------------------------------------------------------------

apt_source_files() {
    # The files apt itself reads (others, such as *.disabled, it ignores, and so do we).
    local f
    [ -f /etc/apt/sources.list ] && echo /etc/apt/sources.list
    for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] && echo "$f"
    done
    return 0
}

mirror() {
    # The Debian archive the host's apt sources name for $RELEASE (read now, never stored).
    [ -n "${BASE_MIRROR:-}" ] && { echo "$BASE_MIRROR"; return; }
    local f url
    while read -r f; do
        case $f in
        *.sources)  # deb822: the URIs of the first stanza whose Suites list the release itself
            url=$(awk -v rel="$RELEASE" '
                BEGIN { RS=""; FS="\n" }
                { uris=""; suites=""; types=""; enabled=1
                  for (i = 1; i <= NF; i++) {
                      if ($i ~ /^URIs:/)    { uris = $i;   sub(/^URIs:[ \t]*/, "", uris) }
                      if ($i ~ /^Suites:/)  { suites = " " $i " " }
                      if ($i ~ /^Types:/)   { types = $i }
                      if ($i ~ /^Enabled:[ \t]*no/) { enabled = 0 }
                  }
                  if (enabled && types ~ /[ \t]deb([ \t]|$)/ && suites ~ ("[ \t]" rel "[ \t]")) { split(uris, u, /[ \t]+/); print u[1]; exit } }' "$f") ;;
        *)          # one-line style: deb [options] URL SUITE COMPONENTS...
            url=$(awk -v rel="$RELEASE" '$1 == "deb" { sub(/^deb[ \t]+(\[[^]]*\][ \t]+)?/, ""); if ($2 == rel) { print $1; exit } }' "$f") ;;
        esac
        [ -n "$url" ] && { echo "$url"; return; }
    done < <(apt_source_files)
    die "no 'deb' source for $RELEASE in /etc/apt/sources.list(.d); set BASE_MIRROR"
}

carried_files() {
    # Everything the base image takes from the host, as absolute paths that exist.
    local f
    apt_source_files
    for f in /etc/apt/apt.conf /etc/apt/apt.conf.d/* /etc/apt/auth.conf /etc/apt/auth.conf.d/* \
             /etc/apt/trusted.gpg /etc/apt/trusted.gpg.d/* /etc/apt/keyrings/* /etc/apt/preferences.d/* \
             /etc/ssl/certs/ca-certificates.crt /usr/local/share/ca-certificates/* /usr/local/share/ca-certificates/*/* \
             /etc/pip.conf /etc/xdg/pip/*; do
        [ -f "$f" ] && echo "$f"
    done
    # Keyrings the sources name (Signed-By / signed-by=) outside /etc/apt.
    apt_source_files | xargs -r grep -ohiE '(signed-by[:=][ \t]*)[^] \t]+' | sed -E 's/^[^:=]*[:=][ \t]*//' \
        | while read -r f; do [ -f "$f" ] && echo "$f"; done
    return 0
}

inputs_hash() {
    # What decides the base image's contents: the recipe (this function's version), the release,
    # the mirror and the carried files. The same inputs keep the existing image.
    {
        echo "recipe 1 minbase $RELEASE $(mirror)"
        carried_files | sort -u | while read -r f; do echo "$f $(sha256sum <"$f" | cut -d' ' -f1)"; done
    } | sha256sum | cut -d' ' -f1
}

base() {
    answers || die "no Docker engine answers; run '$0 start' first"
    local want have
    want=$(inputs_hash)
    have=$(docker image inspect "$BASE_IMAGE" --format '{{index .Config.Labels "org.llm-harness.base.inputs"}}' 2>/dev/null || true)
    if [ "$have" = "$want" ]; then
        log "$BASE_IMAGE is current (inputs ${want:0:12}); no debootstrap"
        return 0
    fi
    [ "$(id -u)" = 0 ] || die "debootstrap needs root"
    mkdir -p "$STATE_DIR"
    install_packages
    local url rootfs t0=$SECONDS
    url=$(mirror)
    rootfs=$(mktemp -d /var/tmp/llm-harness-rootfs.XXXXXX)
    trap 'rm -rf "$rootfs"' EXIT
    log "debootstrap --variant=minbase $RELEASE from the host's mirror (${have:+inputs changed; }about a minute)"
    debootstrap --variant=minbase "$RELEASE" "$rootfs" "$url" >"$STATE_DIR/debootstrap.log" 2>&1 \
        || { tail -n 20 "$STATE_DIR/debootstrap.log" >&2; die "debootstrap failed; see $STATE_DIR/debootstrap.log"; }
    # The host's view of the package indexes and the registries, replacing debootstrap's own list.
    rm -f "$rootfs/etc/apt/sources.list"
    local f
    while read -r f; do
        mkdir -p "$rootfs$(dirname "$f")"
        cp -p "$f" "$rootfs$f"
    done < <(carried_files | sort -u)
    # A small, quiet image: no caches, no docs, no recommends (the docker-* conf files do that if
    # the host has them; these make sure).
    cat >"$rootfs/etc/apt/apt.conf.d/90llm-harness-image" <<'EOF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
EOF
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/*
    log "docker import -> $BASE_IMAGE"
    tar -C "$rootfs" --numeric-owner -c . | docker import \
        --change "LABEL org.llm-harness.base.inputs=$want" \
        --change "LABEL org.llm-harness.base.release=$RELEASE" \
        --change 'ENV LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >/dev/null
    rm -rf "$rootfs"
    trap - EXIT
    log "$BASE_IMAGE built in $(( SECONDS - t0 )) s ($(docker image inspect "$BASE_IMAGE" --format '{{.Size}}' | awk '{printf "%.0f MB", $1/1e6}'))"
}

case ${1:-all} in
    start) start ;;
    stop) stop ;;
    base) base ;;
    status) status ;;
    all) start; base ;;
    *) die "usage: $0 [start|base|stop|status]" ;;
esac
