#!/usr/bin/env bash
# Installs the packages that scripts/build-deb.sh made (dist/, or the folder given as the
# first argument) the way a user of Debian 12 without Swift gets them, and checks them:
# in a minimal Debian 12 (bookworm) tree made by debootstrap, `dpkg -i` both packages,
# `apt-get -f install` whatever their Depends name, then in that tree (chroot): ldd finds
# every library and no Swift one, --version, the manual pages, the completions and the
# units are in place, and a notesd started on a Unix socket answers `notes whoami`,
# `notes put` and `notes cat`.
#
# Needs root (debootstrap, chroot, mounting /proc), debootstrap (installed here if missing)
# and Debian's mirror (NOTES_DEB_MIRROR, default http://deb.debian.org/debian). The
# bootstrapped tree is kept as a tarball in ${XDG_CACHE_HOME:-$HOME/.cache}/notes-deb-test/
# so that the next run skips debootstrap; delete it to start from a fresh one. Everything
# else goes to a temporary folder that is removed at the end, whatever happens.
set -euo pipefail
umask 022

root="$(cd "$(dirname "$0")/.." && pwd)"
dist="${1:-$root/dist}"
mirror="${NOTES_DEB_MIRROR:-http://deb.debian.org/debian}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/notes-deb-test"

say() { echo "test-deb: $*"; }
fail() {
    echo "test-deb: FAILED: $*" >&2
    exit 1
}

[ "$(id -u)" = 0 ] || fail "run as root: debootstrap and chroot need it"
version="$(sed -n 's/.*static let release = "\([^"]*\)".*/\1/p' "$root/Sources/NotesModel/NotesVersion.swift")"
arch="$(dpkg --print-architecture)"
notes_deb="$dist/notes_${version}_${arch}.deb"
notesd_deb="$dist/notesd_${version}_${arch}.deb"
for deb in "$notes_deb" "$notesd_deb"; do
    [ -f "$deb" ] || fail "$deb is missing: run scripts/build-deb.sh first"
done
if ! command -v debootstrap >/dev/null 2>&1; then
    say "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null ||
        fail "debootstrap is missing and apt-get could not install it"
fi

tmp="$(mktemp -d)"
tree="$tmp/root"
notesd_pid=""
cleanup() {
    local status=$? mounts
    if [ -n "$notesd_pid" ] && kill -0 "$notesd_pid" 2>/dev/null; then
        kill -TERM "$notesd_pid" 2>/dev/null || true
        wait "$notesd_pid" 2>/dev/null || true
    fi
    # Whatever is mounted under the temporary folder (our /proc, or one a failed
    # debootstrap left), innermost first.
    mounts="$(awk -v prefix="$tmp/" 'index($2, prefix) == 1 { print $2 }' /proc/mounts | sort -r)"
    for mount in $mounts; do
        umount "$mount" 2>/dev/null || umount -l "$mount" || true
    done
    if awk -v prefix="$tmp/" 'index($2, prefix) == 1 { found = 1 } END { exit !found }' /proc/mounts; then
        echo "test-deb: $tmp still has mounts; not removing it" >&2
    else
        rm -rf "$tmp"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# in_tree COMMAND...: COMMAND inside the tree, with a plain environment (no /opt/swift).
in_tree() {
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=dumb \
        DEBIAN_FRONTEND=noninteractive chroot "$tree" "$@"
}

tarball="$cache/bookworm-minbase-$arch.tar.gz"
mkdir -p "$tree"
if [ -f "$tarball" ]; then
    say "unpacking the cached Debian 12 tree ($tarball)"
    tar -C "$tree" --numeric-owner -xzf "$tarball" || fail "cannot unpack $tarball (delete it to bootstrap again)"
else
    # man-db besides minbase, so that `man -w` can be asked as a user would.
    say "bootstrapping a minimal Debian 12 tree from $mirror (a few minutes; cached for the next run)"
    debootstrap --variant=minbase --include=man-db bookworm "$tree" "$mirror" >"$tmp/debootstrap.log" 2>&1 || {
        tail -20 "$tmp/debootstrap.log" >&2
        fail "debootstrap failed (log above)"
    }
    mkdir -p "$cache"
    tar -C "$tree" --numeric-owner -czf "$tarball.part" . && mv "$tarball.part" "$tarball"
    say "cached the tree in $tarball ($(du -h "$tarball" | cut -f1))"
fi

# A Debian 12 machine's usual sources (updates and security too), the host's resolver,
# and no service started by a package's scripts.
cat >"$tree/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://security.debian.org/debian-security bookworm-security main
EOF
cp -L /etc/resolv.conf "$tree/etc/resolv.conf"
printf '#!/bin/sh\nexit 101\n' >"$tree/usr/sbin/policy-rc.d"
chmod 755 "$tree/usr/sbin/policy-rc.d"
mount -t proc proc "$tree/proc"
if in_tree sh -c 'command -v swift' >/dev/null; then fail "the tree has a swift on PATH"; fi

say "installing $(basename "$notes_deb") and $(basename "$notesd_deb") with dpkg -i, then apt-get -f install"
mkdir -p "$tree/tmp/debs"
cp "$notes_deb" "$notesd_deb" "$tree/tmp/debs/"
in_tree apt-get update -q >"$tmp/apt-update.log" 2>&1 || {
    cat "$tmp/apt-update.log" >&2
    fail "apt-get update failed in the tree"
}
# dpkg -i leaves them unconfigured while their Depends are missing: apt-get -f installs those.
in_tree dpkg -i /tmp/debs/"$(basename "$notes_deb")" /tmp/debs/"$(basename "$notesd_deb")" >"$tmp/dpkg.log" 2>&1 || true
in_tree apt-get -f install -y -q >"$tmp/apt-fix.log" 2>&1 || {
    cat "$tmp/dpkg.log" "$tmp/apt-fix.log" >&2
    fail "apt-get -f install could not resolve the packages' Depends"
}
for package in notes notesd; do
    # shellcheck disable=SC2016 # dpkg-query's own fields
    state="$(in_tree dpkg-query -W -f='${Status} ${Version}' "$package" 2>/dev/null || true)"
    [ "$state" = "install ok installed $version" ] || {
        cat "$tmp/dpkg.log" "$tmp/apt-fix.log" >&2
        fail "$package is '$state' after apt-get -f install, not 'install ok installed $version'"
    }
done
say "installed; apt-get added: $(sed -n 's/^Setting up \([^ ]*\) .*/\1/p' "$tmp/apt-fix.log" | grep -v -x -E 'notes|notesd' | tr '\n' ' ')"

say "checking the binaries' libraries"
libraries="$(in_tree ldd /usr/bin/notes /usr/bin/notesd)" || fail "ldd failed: $libraries"
if grep -E 'not found|libswift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime' <<<"$libraries"; then
    fail "a library above is missing or is Swift's"
fi

say "checking --version, manual pages, completions and units"
for product in notes notesd; do
    got="$(in_tree "$product" --version)" || fail "$product --version failed"
    case "$got" in *"$version"*) ;; *) fail "$product --version says '$got', not $version" ;; esac
    page="$(in_tree man -w "$product")" || fail "man -w $product finds no page"
    [ "$page" = "/usr/share/man/man1/$product.1.gz" ] || fail "man -w $product gives $page"
    in_tree sh -c "MANWIDTH=80 man -P cat $product 2>&1" | grep -q -i "$product" || fail "man $product shows nothing"
    for file in "/usr/share/bash-completion/completions/$product" "/usr/share/zsh/vendor-completions/_$product" \
        "/usr/share/fish/vendor_completions.d/$product.fish"; do
        [ -s "$tree$file" ] || fail "$file is missing or empty"
    done
done
for unit in /usr/lib/systemd/user/notes-mount.service /usr/lib/systemd/user/notesd.service \
    /usr/lib/systemd/system/notesd.service /usr/lib/systemd/system/notesd-postgres.service; do
    [ -f "$tree$unit" ] || fail "$unit is missing"
    grep -q '^ExecStart=/usr/bin/notes' "$tree$unit" || fail "$unit does not start /usr/bin/notes…"
    if grep -n /usr/local "$tree$unit"; then fail "$unit names /usr/local (above)"; fi
done
[ -x "$tree/usr/bin/fusermount3" ] || fail "fuse3's fusermount3 is not installed"

say "starting notesd on a Unix socket in the tree"
mkdir -p "$tree/tmp/notes-test"
chmod 700 "$tree/tmp/notes-test"
socket=/tmp/notes-test/notesd.sock
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 chroot "$tree" \
    /usr/bin/notesd --data-dir /tmp/notes-test/data --socket "$socket" --log-level info \
    >"$tmp/notesd.log" 2>&1 &
notesd_pid=$!
whoami=""
for _ in $(seq 100); do
    if whoami="$(in_tree notes whoami --socket "$socket" 2>&1)"; then break; fi
    kill -0 "$notesd_pid" 2>/dev/null || {
        cat "$tmp/notesd.log" >&2
        fail "notesd ended at start (log above)"
    }
    whoami=""
    sleep 0.1
done
[ -n "$whoami" ] || {
    cat "$tmp/notesd.log" >&2
    fail "notes whoami got no answer from notesd in 10 s (log above)"
}
grep -q -w root <<<"$whoami" || fail "notes whoami says '$whoami', not the account root"
say "notes whoami: ${whoami//$'\n'/; }"
printf '# Packaged\n\nSaved through the installed packages.\n' |
    in_tree notes put packaged.md --socket "$socket" >/dev/null || fail "notes put failed"
in_tree notes cat packaged.md --socket "$socket" | grep -q 'Saved through the installed packages.' ||
    fail "notes cat does not give back the note notes put saved"

say "stopping notesd"
kill -TERM "$notesd_pid"
status=0
wait "$notesd_pid" || status=$?
notesd_pid=""
[ "$status" = 0 ] || {
    cat "$tmp/notesd.log" >&2
    fail "notesd exited with status $status on SIGTERM, not 0"
}

echo "deb test passed"
