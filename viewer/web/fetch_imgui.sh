#!/usr/bin/env bash
# Unpacks Dear ImGui's source from Debian's own source package into DEST (the version
# libimgui-dev ships, 1.86 on bookworm): the web build compiles it with em++, since Debian
# has no wasm build of it. Enables deb-src for the machine's Debian suites when needed (root).
set -euo pipefail
dest=$(realpath -m "${1:?usage: fetch_imgui.sh DEST}")
[ -f "$dest/imgui.h" ] && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
if ! apt-get source --download-only imgui >/dev/null 2>&1; then
  # No deb-src entry yet: mirror the deb entries as deb-src ones.
  list=/etc/apt/sources.list.d/flashsim-deb-src
  if ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/*.sources | grep -v '^#' > "$list.sources"
  fi
  if [ -f /etc/apt/sources.list ]; then
    sed -n 's/^deb /deb-src /p' /etc/apt/sources.list > "$list.list"
  fi
  apt-get update -qq
  apt-get source --download-only imgui >/dev/null 2>&1
fi
tarball=$(ls imgui_*.orig.tar.* | head -n1)
mkdir -p "$dest"
tar -xf "$tarball" -C "$dest" --strip-components=1
echo "fetch_imgui: $(grep -m1 'define IMGUI_VERSION ' "$dest/imgui.h") from $tarball into $dest"
