"""One module per chapter: what it runs at each scale (its grids, its runs, the rows it derives), so that the
notebooks stay thin. What several chapters share (editions, seeds, training seeds, baselines) is in
sre_repro/book.py."""
