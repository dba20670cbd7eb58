"""Pure functions over span DataFrames: the metric registry (``metrics``), the turns table, breakdown,
summaries with percentiles, and what budgets, diff and whatif compute from them."""
