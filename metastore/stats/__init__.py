"""The one column-statistics model: per-type statistics, validation, merge rules and NDV sketches."""
