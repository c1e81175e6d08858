#!/usr/bin/env bash
# Regenerate metastore/orcio/_proto/orc_proto_pb2.py from orc_proto.proto.
# Needs grpcio-tools (a dev-only tool: pip install grpcio-tools); its bundled protoc emits gencode that the
# protobuf runtime pinned in pyproject.toml accepts (the runtime must be at least as new as the gencode).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-$here/../venv/bin/python}"
[ -x "$python" ] || python=python3
cd "$here/metastore/orcio/_proto"
"$python" -m grpc_tools.protoc -I. --python_out=. --pyi_out=. orc_proto.proto
echo "generated $(pwd)/orc_proto_pb2.py with $("$python" -m grpc_tools.protoc --version)"
