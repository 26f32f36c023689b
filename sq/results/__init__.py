"""Results: what a run returns (`raw`), its statistics (`stats`, `_stats`, `confidence`,
`steady`, the `_itl` and `_sketch` accumulators the engine fills), the Report and its metrics."""
