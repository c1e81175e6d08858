"""A Hive-Metastore-compatible column statistics metastore with an embedded ORC engine."""

__version__ = "0.1.0"
#: the writer identity (ORC footer softwareVersion) of the ORC files this application writes
ORC_SOFTWARE_VERSION = f"metastore-orcio {__version__}"
