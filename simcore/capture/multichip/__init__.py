"""Multi-chip captures: validation (`config`), the resolved step (`spec`), chip classes simulated
once each (`chipsim`) on a runner (`runner`), composed across chips (`compose`) and written
partitioned by chip (`tables`); `capture` runs the whole of it."""
