#!/usr/bin/env bash
# The main job on the embedded default: starts notesd (SQLite in ~/.local/share/notes,
# the default Unix socket) unless it already runs, mounts ~/Notes unless it is mounted,
# saves a note through the mount and prints it back, from the mount and from notesd.
set -euo pipefail
bin="${NOTES_BIN:-$(cd "$(dirname "$0")/.." && pwd)/.build/release}"
if ! "$bin/notes" whoami >/dev/null 2>&1; then
    log="${TMPDIR:-/tmp}/notesd-$(id -un).log"
    nohup "$bin/notesd" >>"$log" 2>&1 &
    echo "start: notesd started (pid $!), log in $log"
    for _ in $(seq 100); do
        "$bin/notes" whoami >/dev/null 2>&1 && break
        sleep 0.1
    done
fi
echo "start: signed in as $("$bin/notes" whoami | head -n 1)"
mountpoint="${NOTES_MOUNT:-$HOME/Notes}"
if ! grep -q " $mountpoint fuse.notes " /proc/self/mounts; then
    "$bin/notes" mount "$mountpoint"
fi
printf '# Welcome\n\nThis note lives in notesd. Edit it with any editor at %s/private/welcome.md.\n' "$mountpoint" \
    > "$mountpoint/private/welcome.md"
echo "start: $mountpoint/private/welcome.md reads:"
cat "$mountpoint/private/welcome.md"
for _ in $(seq 50); do
    "$bin/notes" cat welcome.md >/dev/null 2>&1 && break
    sleep 0.1
done
echo "start: and notesd has it too:"
"$bin/notes" cat welcome.md
echo "start: \`notes unmount $mountpoint\` ends the mount."
