#!/usr/bin/env bash
# Installs what notes needs on Debian 12, as root. Idempotent: run it as often as you like.
# Swift itself is expected at /opt/swift (swift.org's Debian 12 toolchain unpacked there); the
# .deb packages (docs/packages.md) need no Swift at all.
set -euo pipefail
if ! command -v swift >/dev/null 2>&1; then
    echo "setup: swift is not on PATH. Install Swift 6.x (swift.org) and add its usr/bin to PATH." >&2
    exit 1
fi
# openssl makes the TLS tests' certificates; gdb shows the stacks of a process that does not end;
# git, emacs-nox, nano and tmux are the editors and tools whose saves the mount tests make.
packages=(libsqlite3-dev sqlite3 curl systemd libfuse3-dev fuse3 attr vim python3 python3-venv libcmark-gfm-dev libcmark-gfm-extensions-dev libgit2-dev chromium postgresql openssl gdb git emacs-nox nano tmux)
missing=()
for package in "${packages[@]}"; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
echo "setup: Debian packages are in place"
