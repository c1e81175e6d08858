"""Python bindings generated from thrift/ by scripts/gen_thrift.sh (do not edit)."""
