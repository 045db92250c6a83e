#!/usr/bin/env bash
# Builds the Debian packages notes_VERSION_ARCH.deb and notesd_VERSION_ARCH.deb into
# dist/ (or the folder given with --output DIR). Debian 12, root or a normal user, with
# the Swift toolchain on PATH and what scripts/setup-debian.sh installs (the -dev packages
# whose libraries the binaries link) plus dpkg-dev.
#
# The binaries are release builds with the Swift runtime and Foundation linked statically
# (in .build-static/), so the packages need no Swift on the machine they go to; what they
# still link dynamically (libc, libfuse3, libgit2, cmark-gfm, SQLite, ...) becomes their
# Depends through dpkg-shlibdeps. Manual pages come from ArgumentParser's generate-manual
# tool and shell completions from the binaries themselves.
#
# Environment: DEB_MAINTAINER ("Name <email>"; else git's user.name and user.email),
# NOTES_DEB_STRIP=0 keeps the binaries' symbols and debug information.
set -euo pipefail
umask 022

root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/dist"
while [ $# -gt 0 ]; do
    case "$1" in
    -o | --output)
        out="$2"
        shift 2
        ;;
    -h | --help)
        echo "usage: scripts/build-deb.sh [--output DIR]   (default: dist/)"
        exit 0
        ;;
    *)
        echo "build-deb: unknown argument $1 (see --help)" >&2
        exit 64
        ;;
    esac
done
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
cd "$root"

say() { echo "build-deb: $*"; }
fail() {
    echo "build-deb: error: $*" >&2
    exit 1
}

for tool in swift dpkg-deb dpkg-shlibdeps dpkg-architecture gzip ldd; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool is not on PATH (swift: the toolchain; dpkg-*: apt-get install dpkg-dev)"
done

version="$(sed -n 's/.*static let release = "\([^"]*\)".*/\1/p' Sources/NotesModel/NotesVersion.swift)"
[ -n "$version" ] || fail "no NotesVersion.release in Sources/NotesModel/NotesVersion.swift"
arch="$(dpkg --print-architecture)"
maintainer="${DEB_MAINTAINER:-}"
if [ -z "$maintainer" ]; then
    name="$(git config user.name 2>/dev/null || true)"
    email="$(git config user.email 2>/dev/null || true)"
    maintainer="${name:-notes maintainers} <${email:-notes@localhost}>"
fi
# The manual pages' date: the last commit's, so that the same commit gives the same pages.
man_date="$(git log -1 --format=%cs 2>/dev/null || date -u +%F)"
scratch=.build-static
say "version $version, architecture $arch, output $out"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

say "a first build compiles every dependency in release: about a quarter of an hour on 2 cores"
for product in notesd notes; do
    say "building $product (release, static Swift runtime)…"
    swift build -c release --static-swift-stdlib --scratch-path "$scratch" --product "$product"
    if ldd "$scratch/release/$product" | grep -E 'libswift|libFoundation|libdispatch|libBlocksRuntime|libicu'; then
        fail "$scratch/release/$product still links the Swift runtime or Foundation dynamically (above)"
    fi
    got="$("$scratch/release/$product" --version)"
    case "$got" in *"$version"*) ;; *) fail "$product --version says '$got', not $version" ;; esac
done
bin="$scratch/release"
say "the binaries link no Swift library dynamically; $("$bin/notes" --version | head -1)"

# Manual pages: ArgumentParser's generate-manual tool, the one its plugin runs (`swift
# package generate-manual`), from the same checkout as the binaries use. Not the plugin
# itself: it first builds every product of the package in release with its own flags
# (swift package has no --static-swift-stdlib), in the scratch folder it is given, which
# compiles everything a second time, and the next static build a third.
say "building ArgumentParser's generate-manual tool…"
swift build --package-path "$scratch/checkouts/swift-argument-parser" --scratch-path "$scratch/generate-manual" \
    --product generate-manual >"$work/generate-manual.log" 2>&1 || {
    cat "$work/generate-manual.log" >&2
    fail "could not build generate-manual (log above)"
}
install -d "$work/man"
for product in notesd notes; do
    say "generating the manual page of $product…"
    "$scratch/generate-manual/debug/generate-manual" "$bin/$product" --output-directory "$work/man" \
        --date "$man_date" --section 1
    [ -s "$work/man/$product.1" ] || fail "generate-manual wrote no $product.1"
done

# stage PRODUCT: the package tree in $work/PRODUCT/root, with the binary, its completions
# and its manual page; the units are added by the caller.
stage() {
    local product="$1" pkg="$work/$1/root"
    install -d "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/usr/share/man/man1" \
        "$pkg/usr/share/bash-completion/completions" "$pkg/usr/share/zsh/vendor-completions" \
        "$pkg/usr/share/fish/vendor_completions.d"
    install -m 755 "$bin/$product" "$pkg/usr/bin/$product"
    if [ "${NOTES_DEB_STRIP:-1}" != 0 ]; then
        strip --remove-section=.comment --remove-section=.note --strip-unneeded "$pkg/usr/bin/$product"
    fi
    "$bin/$product" --generate-completion-script bash >"$pkg/usr/share/bash-completion/completions/$product"
    "$bin/$product" --generate-completion-script zsh >"$pkg/usr/share/zsh/vendor-completions/_$product"
    "$bin/$product" --generate-completion-script fish >"$pkg/usr/share/fish/vendor_completions.d/$product.fish"
    gzip -9n <"$work/man/$product.1" >"$pkg/usr/share/man/man1/$product.1.gz"
}

# unit SOURCE DEST: a copy of a unit of systemd/ with the installed binaries' paths.
unit() {
    install -d "$(dirname "$2")"
    sed 's#/usr/local/bin/#/usr/bin/#g' "$1" >"$2"
    chmod 644 "$2"
    ! grep -n '/usr/local' "$2" || fail "$2 still names /usr/local"
}

# depends PRODUCT: the binary's shared-library dependencies, the standard way: from a
# folder with a debian/control stub naming the package.
depends() {
    local product="$1" dir="$work/$1"
    install -d "$dir/debian"
    printf 'Source: notes\n\nPackage: %s\nArchitecture: any\n' "$product" >"$dir/debian/control"
    (cd "$dir" && dpkg-shlibdeps -O -eroot/usr/bin/"$product") | sed -n 's/^shlibs:Depends=//p'
}

# build PRODUCT SECTION DEPENDS SUMMARY DESCRIPTION-LINE...: DEBIAN/control, then the .deb.
build() {
    local product="$1" section="$2" deps="$3" summary="$4" pkg="$work/$1/root"
    shift 4
    {
        echo "Package: $product"
        echo "Version: $version"
        echo "Architecture: $arch"
        echo "Maintainer: $maintainer"
        echo "Installed-Size: $(du -sk --exclude=DEBIAN "$pkg" | cut -f1)"
        echo "Depends: $deps"
        echo "Section: $section"
        echo "Priority: optional"
        echo "Description: $summary"
        for line in "$@"; do echo " $line"; done
    } >"$pkg/DEBIAN/control"
    install -d "$out"
    rm -f "$out/${product}_${version}_${arch}.deb"
    dpkg-deb --root-owner-group -Zxz --build "$pkg" "$out/${product}_${version}_${arch}.deb" >/dev/null
    say "wrote $out/${product}_${version}_${arch}.deb ($(du -h "$out/${product}_${version}_${arch}.deb" | cut -f1)), Depends: $deps"
}

say "staging notes…"
stage notes
unit systemd/user/notes-mount.service "$work/notes/root/usr/lib/systemd/user/notes-mount.service"
notes_deps="$(depends notes)"
[ -n "$notes_deps" ] || fail "dpkg-shlibdeps found no dependencies for notes"
# The mount unmounts and mounts through fusermount3.
build notes utils "$notes_deps, fuse3" "markdown notes shared like CloudKit records: client and file system" \
    "notes is the command-line client of notesd: it saves, shows, searches, shares and" \
    "exports notes, and 'notes mount ~/Notes' shows them as files any editor can open" \
    "(FUSE), working offline and merging concurrent edits." \
    "The per-user unit notes-mount.service mounts ~/Notes."

say "staging notesd…"
stage notesd
for service in systemd/*.service; do
    unit "$service" "$work/notesd/root/usr/lib/systemd/system/$(basename "$service")"
done
unit systemd/user/notesd.service "$work/notesd/root/usr/lib/systemd/user/notesd.service"
# The system units run notesd as the system user notes: systemd-sysusers creates it.
install -d "$work/notesd/root/usr/lib/sysusers.d"
printf 'u notes - "notes daemon" /var/lib/notes\n' >"$work/notesd/root/usr/lib/sysusers.d/notesd.conf"
chmod 644 "$work/notesd/root/usr/lib/sysusers.d/notesd.conf"
cat >"$work/notesd/root/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ] && command -v systemd-sysusers >/dev/null 2>&1; then
    systemd-sysusers notesd.conf || true
fi
EOF
chmod 755 "$work/notesd/root/DEBIAN/postinst"
notesd_deps="$(depends notesd)"
[ -n "$notesd_deps" ] || fail "dpkg-shlibdeps found no dependencies for notesd"
build notesd net "$notesd_deps" "markdown notes shared like CloudKit records: daemon" \
    "notesd keeps accounts, notes as records, shares and their rules, and serves them" \
    "over a Unix socket and HTTP, with change notifications, on SQLite or PostgreSQL." \
    "Units: notesd.service and notesd-postgres.service (system, user notes)," \
    "and the per-user notesd.service."

say "done: $out/notes_${version}_${arch}.deb $out/notesd_${version}_${arch}.deb"
