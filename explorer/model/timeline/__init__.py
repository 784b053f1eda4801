"""The timeline index: what the window draws and navigates, built once per trace.

trace_index (tracks, lanes with busy-time prefix sums, counters, colour codes), lod
(per-pixel coverage), counter_bins, track_tree (the rows), event_details, search,
selection (what an area selection holds), utilisation, collective_waits, time_axis,
and view_state: the evented state every widget of a window shares.
"""
