"""explorer.model: everything the explorer computes, without Qt.

- `timeline/`: the index the window draws from (lanes, level of detail, counters, rows)
  and the view state its widgets share;
- `analysis/`: summary metrics, recommendations, operator tree, dependencies, diff;
- here, what both use: `scope` (the one selection grammar), `intervals` (vectorised
  interval primitives), `table_chunks` and `events` (reading tables in place), `units`.
"""
