"""`metastore sql`: a Hive-syntax SQL shell over the metastore client (parser, executor, output, shell)."""
