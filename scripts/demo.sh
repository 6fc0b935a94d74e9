#!/usr/bin/env bash
# The main job: a local room of three headless viewers on a film (generated, or the one given).
# A room server starts, alice, bob and carol join, each does something, every notice is printed
# as the viewers see it, and the measured skew between the players is printed after each step.
set -euo pipefail
# The film: the argument, else $MEDIA (make demo MEDIA="my film.mkv" passes it this way, spaces and
# all); a relative path is taken from where we were started.
media=${1:-${MEDIA:-}}
case $media in
  "~/"*) media=$HOME/${media#"~/"} ;;
  "" | /* | *://*) ;;
  *) media=$PWD/$media ;;
esac
cd "$(dirname "$0")/.."
bin=.build/debug
out=demo-out
mkdir -p "$out"
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
# The demo's own state (the server's certificate, the viewers' known_hosts), apart from yours.
export XDG_STATE_HOME=$PWD/$out/state
rm -rf "$XDG_STATE_HOME"
mkdir -p "$XDG_RUNTIME_DIR" "$XDG_STATE_HOME"
chmod 700 "$XDG_RUNTIME_DIR" "$XDG_STATE_HOME"
pids=()
cleanup() { for ((i=${#pids[@]}-1; i>=0; i--)); do kill "${pids[i]}" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

echo "== room server on 127.0.0.1 (port chosen by the system), TLS with a certificate it made"
$bin/cowatch-server --listen 127.0.0.1:0 --state-dir "$XDG_STATE_HOME/server" > "$out/server.out" 2> "$out/server.log" &
pids+=($!)
for _ in $(seq 100); do grep -q "TLS certificate" "$out/server.out" 2>/dev/null && break; sleep 0.1; done
address=$(sed -n 's/.*listening on //p' "$out/server.out" | head -1)
fingerprint=$(grep -o 'sha256:[A-Za-z0-9_-]*' "$out/server.out" | head -1)
sed 's/^/   /' "$out/server.out"
# The room secret: alice, who creates the room, gives it; the invite link carries it to friends.
secret=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
invite="cowatch://$address/movie-night?secret=$secret&fp=$fingerprint"
echo "   invite link (room, secret, the server's key): cowatch://$address/movie-night?secret=…&fp=$fingerprint"

for who in alice bob carol; do
  echo "== $who joins room movie-night with $media (headless), through the invite link"
  $bin/cowatchd --media "$media" --name "$who" --join "$invite" \
    --mpv vo=null --mpv ao=null 2> "$out/$who.log" &
  pids+=($!)
  for _ in $(seq 100); do $bin/cowatch status --name "$who" >/dev/null 2>&1 && break; sleep 0.1; done
done
sleep 1
echo "== what alice sees, as it happens:"
$bin/cowatch events --name alice 2>/dev/null | grep --line-buffered -v '^playing at\|^paused at\|^at the end' | sed -u 's/^/   alice sees: /' &
pids+=($!)
sleep 0.5

skew() {
  $bin/cowatch-bench observe --socket "$XDG_RUNTIME_DIR/cowatch/alice.sock" --socket "$XDG_RUNTIME_DIR/cowatch/bob.sock" \
    --socket "$XDG_RUNTIME_DIR/cowatch/carol.sock" --rate "${1:-1}" | sed 's/^/   measured /'
}
step() { who=$1; shift; echo "== $who: cowatch $*"; $bin/cowatch "$@" --name "$who" >/dev/null; sleep "${PAUSE:-2}"; }

step carol participants
$bin/cowatch participants --name carol | sed 's/^/   /'
step alice play
skew
step bob pause
for who in alice bob carol; do echo "   $who: $($bin/cowatch status --name "$who" | sed -n 2p | sed 's/^ *//')"; done
step carol seek 1:00
step alice play
skew
step bob seek -20
skew
step carol speed 1.25
skew 1.25
echo "== dave joins late"
$bin/cowatchd --media "$media" --name dave --join "$invite" --mpv vo=null --mpv ao=null 2> "$out/dave.log" &
pids+=($!)
sleep 3
$bin/cowatch-bench observe --socket "$XDG_RUNTIME_DIR/cowatch/alice.sock" --socket "$XDG_RUNTIME_DIR/cowatch/dave.sock" --rate 1.25 | sed 's/^/   alice vs dave: /'
$bin/cowatch participants --name alice | sed 's/^/   /'
echo "== mallory knows the address and the room's name, but not the secret"
if $bin/cowatchd --media "$media" --name mallory --join "$address" --room movie-night --mpv vo=null --mpv ao=null \
    2> "$out/mallory.log"; then echo "   mallory got in (unexpected)"; else echo "   $(tail -1 "$out/mallory.log")"; fi
second=$out/second-film.mkv
cp -f "$media" "$second"
# A room switches players to network URLs only, never to local paths: serve the copy over HTTP.
$bin/cowatch-bench serve "$second" > "$out/serve.out" &
pids+=($!)
for _ in $(seq 50); do [ -s "$out/serve.out" ] && break; sleep 0.1; done
echo "== alice switches everyone to another film (the group waits until all four have it, then plays)"
step alice open "$(head -1 "$out/serve.out")" --title "The second film"
$bin/cowatch-bench observe --socket "$XDG_RUNTIME_DIR/cowatch/alice.sock" --socket "$XDG_RUNTIME_DIR/cowatch/bob.sock" \
  --socket "$XDG_RUNTIME_DIR/cowatch/carol.sock" --socket "$XDG_RUNTIME_DIR/cowatch/dave.sock" | sed 's/^/   measured /'
step bob leave
step bob join
echo "== carol may not end the evening: alice created the room, so she owns it"
$bin/cowatch end --yes --name carol 2>&1 | sed 's/^/   /' || true
step alice op carol
echo "== carol, now an operator, ends the evening for everyone (--yes: no question asked)"
step carol end --yes
for who in alice bob carol dave; do echo "   $who: $($bin/cowatch status --name "$who" | grep 'room:' | sed 's/^ *//')"; done
echo "== done (logs in $out/)"
