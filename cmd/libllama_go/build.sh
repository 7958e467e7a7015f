#!/usr/bin/env bash
# build.sh builds libllama_go.so, the library github.com/kelindar/search
# dlopens, for `make llama`. Only the npm registry is reachable from Kiln's
# machines, so everything comes from two pinned npm packages:
#
#   @node-llama-cpp/linux-x64  prebuilt llama.cpp/ggml shared libraries
#   node-llama-cpp             the matching llama.cpp source, as a git bundle,
#                              from which we take only the public headers
#
# plus shim.cc (next to this script), compiled with g++ against them.
#
# Output: $KILN_LLAMA_DIR/lib (default <repo>/.cache/llama/lib) holding
# libllama_go.so and the prebuilt .so files it finds through its
# $ORIGIN rpath. Point LD_LIBRARY_PATH at that directory: kelindar looks for
# the library in $LD_LIBRARY_PATH, /lib, /usr/lib, /usr/local/lib and the
# working directory, and panics at init when it is missing. The directory is
# printed as the last line of standard output.
#
# Idempotent: a stamp records the inputs (package versions, shim.cc, this
# script), so a second run with nothing changed returns at once.
set -euo pipefail

# Pinned versions and the npm integrity hashes of their tarballs; bump all
# four together (`npm view PKG@VERSION dist.integrity`).
readonly NLC_VERSION=3.22.1
readonly PREBUILT_PKG="@node-llama-cpp/linux-x64@${NLC_VERSION}"
readonly PREBUILT_SHA512="sha512-5uCCDNqWCNfaAm8aR/Uzxbo4HBpKgNF91kCHPepKhgMgV2OAmatoefbOlMihsqCiH2Od35E/eUHQCFbfRBJuOg=="
readonly SOURCE_PKG="node-llama-cpp@${NLC_VERSION}"
readonly SOURCE_SHA512="sha512-bltIipuWmc123H7tMIgDGKSsSrhmhlQYeVUC48XTjVW7XGJJiJJyCdlTMzQ/LiWoPkGDpcL4FviDpgw7qfTiDw=="
# The llama.cpp commit in the bundle; the prebuilt libraries were built from it.
readonly LLAMA_COMMIT=de3ff815ea7d559ee917f063901b8986f038abc6

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
dir=${KILN_LLAMA_DIR:-$root/.cache/llama}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
lib=$dir/lib
inc=$dir/include
log() { echo "llama: $*" >&2; }

case "$(uname -s)-$(uname -m)" in
Linux-x86_64) ;;
*) log "only linux-x64 is supported (npm package @node-llama-cpp/linux-x64)"; exit 1 ;;
esac
for tool in npm tar git g++ nm sha256sum openssl base64; do
	command -v "$tool" >/dev/null || { log "missing $tool"; exit 1; }
done

# Step 0: skip everything when the last build had the same inputs.
stamp=$(cat "$here/shim.cc" "$here/build.sh" | sha256sum | cut -d' ' -f1)
stamp="$NLC_VERSION $LLAMA_COMMIT $stamp"
if [[ -f $lib/libllama_go.so && -f $dir/stamp && "$(cat "$dir/stamp")" == "$stamp" ]]; then
	log "up to date"
	echo "$lib"
	exit 0
fi

work=$(mktemp -d "$dir/tmp.XXXXXX")
trap 'rm -rf "$work"' EXIT

# fetch PKG SHA512 prints the path of the package tarball. `npm pack` fetches
# only the tarball (no dependencies, no install scripts, which would try to
# download binaries from GitHub) through npm's own cache; we then check the
# pinned integrity ourselves.
fetch() {
	local name
	name=$(cd "$work" && npm pack --silent "$1" | tail -n1)
	[[ -f $work/$name ]] || { log "npm pack $1 failed"; exit 1; }
	local got
	got="sha512-$(openssl dgst -sha512 -binary "$work/$name" | base64 -w0)"
	[[ $got == "$2" ]] || { log "$1: integrity $got, want $2"; exit 1; }
	echo "$work/$name"
}

# Step 1: the prebuilt libraries (libllama, libggml, libggml-base and one
# libggml-cpu-<arch>.so per CPU family; ggml loads the best at run time).
# They already carry RUNPATH $ORIGIN, so they find each other in $lib.
# libllama-common.so (llama.cpp's C++ helpers, 6 MB) is left out: the shim
# uses only the C API.
if [[ ! -f $lib/.prebuilt-$NLC_VERSION ]]; then
	log "fetching $PREBUILT_PKG"
	tgz=$(fetch "$PREBUILT_PKG" "$PREBUILT_SHA512")
	rm -rf "$lib" && mkdir -p "$lib"
	tar -xzf "$tgz" -C "$lib" --strip-components=3 --wildcards 'package/bins/linux-x64/*.so' \
		--exclude='*/libllama-common.so'
	touch "$lib/.prebuilt-$NLC_VERSION"
fi

# Step 2: the headers (include/ and ggml/include/) matching those libraries,
# taken from the llama.cpp git bundle without checking out the whole tree.
if [[ ! -f $inc/.commit-$LLAMA_COMMIT ]]; then
	log "fetching $SOURCE_PKG (llama.cpp headers)"
	tgz=$(fetch "$SOURCE_PKG" "$SOURCE_SHA512")
	tar -xzf "$tgz" -C "$work" package/llama/gitRelease.bundle
	git clone --quiet --bare "$work/package/llama/gitRelease.bundle" "$work/llama.git"
	head=$(git --git-dir="$work/llama.git" rev-parse HEAD)
	[[ $head == "$LLAMA_COMMIT" ]] || { log "bundle is at $head, want $LLAMA_COMMIT"; exit 1; }
	rm -rf "$inc" && mkdir -p "$inc"
	git --git-dir="$work/llama.git" archive "$LLAMA_COMMIT" include ggml/include | tar -x -C "$inc"
	touch "$inc/.commit-$LLAMA_COMMIT"
fi

# Step 3: the shim. -fvisibility=hidden keeps the exports to the functions
# shim.cc marks; --no-undefined catches a header/library mismatch at link
# time; $ORIGIN lets the loader find the prebuilt libraries beside it.
log "compiling shim.cc"
llama_so=$(cd "$lib" && ls libllama.v*.so)
ggml_so=$(cd "$lib" && ls libggml.v*.so)
g++ -std=c++17 -O2 -fPIC -shared -fvisibility=hidden -Wall -Wextra \
	-I"$inc/include" -I"$inc/ggml/include" \
	"$here/shim.cc" -o "$work/libllama_go.so" \
	-L"$lib" -l:"$llama_so" -l:"$ggml_so" -l:libggml-base.so \
	-Wl,-soname,libllama_go.so -Wl,--no-undefined -Wl,-rpath,'$ORIGIN'

# Step 4: check the exports kelindar binds; a missing one would panic in its init.
for sym in load_library load_model load_context free_model free_context embed_size embed_text kiln_set_threads; do
	nm -D --defined-only "$work/libllama_go.so" | grep -qw "$sym" || { log "missing export $sym"; exit 1; }
done
mv -f "$work/libllama_go.so" "$lib/libllama_go.so"
echo "$stamp" >"$dir/stamp"
log "built $lib/libllama_go.so"
echo "$lib"
