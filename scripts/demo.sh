#!/usr/bin/env bash
# The main job: a film (generated, or the one given), headless cowatchd, driven through its
# control socket by the cowatch CLI, with every event printed as it happens.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=.build/debug
out=demo-out
mkdir -p "$out"
media=${1:-}
if [ -z "$media" ]; then
  media=$out/film.mkv
  if [ ! -f "$media" ]; then
    echo "== generating a 2-minute test film with ffmpeg: $media"
    ffmpeg -hide_banner -loglevel error -y \
      -f lavfi -i "testsrc2=size=320x180:rate=25:duration=120" \
      -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=120" \
      -c:v libx264 -preset ultrafast -g 25 -c:a aac -shortest "$media"
  fi
fi
export XDG_RUNTIME_DIR=$PWD/$out/run
mkdir -p "$XDG_RUNTIME_DIR"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

echo "== starting cowatchd (headless) on $media"
$bin/cowatchd --media "$media" --name alice --paused --mpv vo=null --mpv ao=null &
pids+=($!)
for _ in $(seq 100); do $bin/cowatch status --name alice >/dev/null 2>&1 && break; sleep 0.1; done

$bin/cowatch events --name alice | sed -u 's/^/   event: /' &
pids+=($!)
sleep 0.3
step() { echo "== cowatch $*"; $bin/cowatch "$@" --name alice | sed 's/^/   /'; sleep "${PAUSE:-1}"; }
step status
step play
step seek 1:00
step seek -10
step speed 1.5
step pause
step speed 1
step status
echo "== raw JSON over the socket (as socat would send it)"
$bin/cowatch get time-pos --name alice --json | sed 's/^/   time-pos: /'
echo "== done"
