"""The analyses of a trace: the numbers `trnx summary`/`diff` print and the analysis panels show.

summary (+ metrics, peaks, engine_time), recommendations, hierarchy (the operator tree,
bound), kernel_details, dependencies, collective_stats, temporal, diff, export_tables,
profile_summary, and trace_analysis: the one composition the CLI and the GUI share.
A cost rule lives in `bound.py` (what bounds a kernel) or `recommendations.py` (a rule).
"""
