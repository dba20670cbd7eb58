"""Pure functions over span DataFrames: turns table, metrics, percentiles."""
