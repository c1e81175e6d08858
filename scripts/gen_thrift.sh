#!/usr/bin/env bash
# Regenerate the Python Thrift bindings in metastore/api/ from thrift/*.thrift.
#
#   metastore/api/hive_metastore/  (ttypes, constants, ThriftHiveMetastore)
#   metastore/api/fb303/           (ttypes, constants, FacebookService)
#
# Generation happens in a scratch directory; only the two packages above are copied
# back, so the compiler's namespace __init__.py files never touch metastore/__init__.py,
# and stale modules from an older IDL are removed. Running it twice gives the same tree.
#
# Needs the Apache Thrift compiler (Debian/Ubuntu package: thrift-compiler). The runtime
# library is the `thrift` PyPI package listed in pyproject.toml.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
idl_dir="$here/thrift"
api_dir="$here/metastore/api"
packages=(hive_metastore fb303)

if ! command -v thrift >/dev/null 2>&1; then
    echo "error: the 'thrift' compiler is not on PATH." >&2
    echo "       install it with: sudo apt-get install thrift-compiler" >&2
    exit 1
fi

for idl in hive_metastore.thrift fb303.thrift; do
    if [ ! -f "$idl_dir/$idl" ]; then
        echo "error: missing IDL file $idl_dir/$idl" >&2
        exit 1
    fi
done

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# -r follows `include "fb303.thrift"`, so both packages come out of one run.
thrift -r --gen py -I "$idl_dir" -out "$scratch" "$idl_dir/hive_metastore.thrift"

generated="$scratch/metastore/api"
for pkg in "${packages[@]}"; do
    if [ ! -d "$generated/$pkg" ]; then
        echo "error: thrift did not produce package $pkg (check the 'namespace py' lines)" >&2
        exit 1
    fi
    # The *-remote files are command-line demo clients; nothing imports them.
    rm -f "$generated/$pkg"/*-remote
done

mkdir -p "$api_dir"
for pkg in "${packages[@]}"; do
    rm -rf "${api_dir:?}/$pkg"
    cp -R "$generated/$pkg" "$api_dir/$pkg"
done

if [ ! -f "$api_dir/__init__.py" ]; then
    printf '"""Python bindings generated from thrift/ by scripts/gen_thrift.sh (do not edit)."""\n' \
        >"$api_dir/__init__.py"
fi

echo "generated ${packages[*]} in $api_dir with $(thrift --version)"
